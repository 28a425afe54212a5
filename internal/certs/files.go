package certs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Files are the paths WriteFiles wrote.
type Files struct {
	CA, CAKey, ServerCert, ServerKey, ClientCert, ClientKey string
}

// FilesIn are the paths of a set written into dir.
func FilesIn(dir string) Files {
	return Files{
		CA: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
	}
}

// dataLink is the symlink that names the current generation of the files, as in the
// directories kubelet writes Secrets into.
const dataLink = "..data"

// WriteFiles writes the set as PEM files into dir (WriteDir): ca.crt, ca.key, server.crt,
// server.key, client.crt and client.key.
func (s *Set) WriteFiles(dir string) (Files, error) {
	f := FilesIn(dir)
	err := WriteDir(dir, map[string][]byte{
		f.CA: s.CA, f.CAKey: s.CAKey, f.ServerCert: s.Server.Cert, f.ServerKey: s.Server.Key, f.ClientCert: s.Client.Cert, f.ClientKey: s.Client.Key,
	})
	return f, err
}

// WriteDir writes files (path in dir → content; readable by the owner only) as kubelet writes
// a Secret volume: the files of a generation go into a new hidden directory, then one rename
// swaps the symlink ..data to it, and each name is a symlink through ..data. A process that
// opens a certificate and then its key never sees a new certificate with an old key, so a set
// can be renewed in place under running etcd members and replicas.
func WriteDir(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	gen, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05.")+"*")
	if err != nil {
		return err
	}
	for path, data := range files {
		var err error
		if filepath.Dir(path) != filepath.Clean(dir) {
			err = fmt.Errorf("%s is not a file of %s", path, dir)
		} else {
			err = os.WriteFile(filepath.Join(gen, filepath.Base(path)), data, 0o600)
		}
		if err != nil {
			os.RemoveAll(gen) // a generation never linked: the files in use stay as they were
			return err
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	if err := swapSymlink(filepath.Join(dir, dataLink), filepath.Base(gen)); err != nil {
		os.RemoveAll(gen)
		return err
	}
	for path := range files {
		target := filepath.Join(dataLink, filepath.Base(path))
		if t, err := os.Readlink(path); err == nil && t == target {
			continue
		}
		// A file of the layout before ..data, or a new name: replaced by its link at once.
		if err := swapSymlink(path, target); err != nil {
			return err
		}
	}
	if old != "" && strings.HasPrefix(old, "..") && old != dataLink {
		_ = os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// swapSymlink points link at target in one rename, whatever link was before.
func swapSymlink(link, target string) error {
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		return fmt.Errorf("swap %s to %s: %w", link, target, err)
	}
	return nil
}

// ReadAuthorityDir is the CA of a set WriteFiles wrote into dir (ca.crt and ca.key).
func ReadAuthorityDir(dir string) (*Authority, error) {
	f := FilesIn(dir)
	cert, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(f.CAKey)
	if err != nil {
		return nil, fmt.Errorf("%w (a set made before ringfire kept its CA key cannot be renewed: make a new one)", err)
	}
	return LoadAuthority(cert, key)
}
