// Command mkimage builds a container image without a container engine: one
// layer that holds the given files (each a static binary or a small text file),
// a config with the entrypoint, environment and user, written as an image
// archive that `ctr images import` loads into containerd.
//
//	mkimage -name ringfire.local/ringfire:dev -out ringfire.tar \
//	    -file /ringfire=bin/ringfire -entrypoint /ringfire -user 65532:65532
//
// Files are owned by root and mode 0755 (binaries) or 0644 (-text files);
// directories on their paths are made 0755. The layer's timestamps are the
// Unix epoch, so the same inputs give the same image digest.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type pairs []string

func (p *pairs) String() string     { return strings.Join(*p, ",") }
func (p *pairs) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var files, texts, env pairs
	ref := flag.String("name", "", "image reference, e.g. ringfire.local/ringfire:dev")
	out := flag.String("out", "", "image archive to write")
	entrypoint := flag.String("entrypoint", "", "entrypoint, words split on spaces")
	user := flag.String("user", "", "user (uid:gid) the container runs as")
	flag.Var(&files, "file", "IMAGEPATH=HOSTPATH: a file in the image, mode 0755 (repeatable)")
	flag.Var(&texts, "text", "IMAGEPATH=CONTENT: a text file in the image, mode 0644 (repeatable)")
	flag.Var(&env, "env", "NAME=VALUE in the image's environment (repeatable)")
	flag.Parse()
	if *ref == "" || *out == "" || len(files) == 0 {
		fmt.Fprintln(os.Stderr, "mkimage: -name, -out and at least one -file are required")
		flag.Usage()
		os.Exit(2)
	}
	if err := build(*ref, *out, *entrypoint, *user, files, texts, env); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

type entry struct {
	path string
	mode int64
	data []byte
}

func build(ref, out, entrypoint, user string, files, texts, env []string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image name %q: %w", ref, err)
	}
	var entries []entry
	for _, f := range files {
		dst, src, ok := strings.Cut(f, "=")
		if !ok || !path.IsAbs(dst) {
			return fmt.Errorf("-file %q: want /IMAGEPATH=HOSTPATH", f)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		entries = append(entries, entry{dst, 0o755, data})
	}
	for _, t := range texts {
		dst, content, ok := strings.Cut(t, "=")
		if !ok || !path.IsAbs(dst) {
			return fmt.Errorf("-text %q: want /IMAGEPATH=CONTENT", t)
		}
		entries = append(entries, entry{dst, 0o644, []byte(content)})
	}
	layerTar, err := layerArchive(entries)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, env...)
	if entrypoint != "" {
		cfg.Config.Entrypoint = strings.Fields(entrypoint)
	}
	cfg.Config.User = user
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}

// layerArchive writes the entries, and the directories above them, as one
// uncompressed tar stream in path order.
func layerArchive(entries []entry) ([]byte, error) {
	dirs := map[string]bool{}
	for _, e := range entries {
		for d := path.Dir(e.path); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var names []string
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, d := range names {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	for _, e := range entries {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(e.path, "/"), Mode: e.mode, Size: int64(len(e.data)), ModTime: epoch}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
