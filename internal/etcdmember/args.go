package etcdmember

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Flags are what the decision needs of an etcd command line.
type Flags struct {
	Name           string
	DataDir        string
	PeerURLs       []string          // --initial-advertise-peer-urls
	InitialCluster map[string]string // name → peer URL, --initial-cluster
	PeerCA         string            // --peer-trusted-ca-file
	PeerCert       string            // --peer-cert-file
	PeerKey        string            // --peer-key-file
}

// ParseFlags reads the flags Choose needs from etcd's arguments (without the program name),
// written --flag=value or --flag value.
func ParseFlags(args []string) (Flags, error) {
	values := map[string]string{}
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			name, ok = strings.CutPrefix(args[i], "-")
		}
		if !ok {
			continue
		}
		if k, v, eq := strings.Cut(name, "="); eq {
			values[k] = v
		} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			values[name] = args[i+1]
			i++
		}
	}
	f := Flags{
		Name: values["name"], DataDir: values["data-dir"],
		PeerCA: values["peer-trusted-ca-file"], PeerCert: values["peer-cert-file"], PeerKey: values["peer-key-file"],
		InitialCluster: map[string]string{},
	}
	if v := values["initial-advertise-peer-urls"]; v != "" {
		f.PeerURLs = strings.Split(v, ",")
	}
	for _, pair := range strings.Split(values["initial-cluster"], ",") {
		if name, url, ok := strings.Cut(pair, "="); ok {
			f.InitialCluster[name] = url
		}
	}
	switch {
	case f.Name == "" || f.DataDir == "":
		return f, fmt.Errorf("etcd's --name and --data-dir are needed to choose --initial-cluster-state")
	case len(f.PeerURLs) == 0:
		return f, fmt.Errorf("etcd's --initial-advertise-peer-urls is needed to choose --initial-cluster-state")
	case len(f.InitialCluster) == 0:
		return f, fmt.Errorf("etcd's --initial-cluster is needed to choose --initial-cluster-state")
	}
	return f, nil
}

// Peers are the other members' peer URLs in --initial-cluster.
func (f Flags) Peers() []string {
	var peers []string
	for name, url := range f.InitialCluster {
		if name != f.Name {
			peers = append(peers, url)
		}
	}
	return peers
}

// HasData reports whether the data directory holds a write-ahead log, as etcd checks.
func (f Flags) HasData() bool {
	wals, _ := filepath.Glob(filepath.Join(f.DataDir, "member", "wal", "*.wal"))
	return len(wals) > 0
}

// WithState is args with --initial-cluster-state set to s (replaced, or added).
func WithState(args []string, s State) []string {
	out := make([]string, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		switch {
		case strings.HasPrefix(args[i], "--initial-cluster-state="):
			continue
		case args[i] == "--initial-cluster-state" && i+1 < len(args):
			i++
			continue
		}
		out = append(out, args[i])
	}
	return append(out, "--initial-cluster-state="+string(s))
}
