package plugins

import (
	"strings"
	"testing"
)

func TestNewRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		plugin string
		args   []string
		want   string // a part of the error
	}{
		{"horovod", nil, `unknown plugin "horovod" (known: env, mpi, pytorch, ssh, svc, tensorflow)`},
		{"svc", []string{"--no-such-flag"}, "plugin svc: flag provided but not defined: -no-such-flag; it takes --disable-network-policy, --inject-hosts-env, --publish-not-ready-addresses"},
		{"svc", []string{"publish-not-ready-addresses"}, `plugin svc: unexpected argument "publish-not-ready-addresses"`},
		{"svc", []string{"--publish-not-ready-addresses=maybe"}, "invalid boolean value"},
		{"env", []string{"--index"}, "plugin env: flag provided but not defined: -index; it takes no arguments"},
		{"mpi", []string{"--port=0"}, "plugin mpi: --port=0 is not a port number"},
		{"mpi", []string{"--port=ssh"}, `invalid value "ssh" for flag -port`},
		{"pytorch", []string{"--master="}, "plugin pytorch: --master names no task"},
		{"pytorch", []string{"-h"}, "plugin pytorch: help was asked for; it takes --master=<value>, --port=<value>, --worker=<value>"},
		{"tensorflow", []string{"--port=70000"}, "plugin tensorflow: --port=70000 is not a port number"},
		{"tensorflow", []string{"--evaluator", ""}, "--evaluator names no task"},
		{"ssh", []string{"--ssh-private-key=KEY"}, "plugin ssh: --ssh-private-key and --ssh-public-key go together"},
		{"ssh", []string{"--ssh-key-file-path="}, "plugin ssh: --ssh-key-file-path is empty"},
	} {
		t.Run(tc.plugin+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := New(tc.plugin, tc.args, Env{})
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNewAcceptsVolcanoSpellings(t *testing.T) {
	for _, tc := range []struct {
		plugin string
		args   []string
	}{
		{"svc", nil},
		{"svc", []string{}},
		{"svc", []string{"--publish-not-ready-addresses", "--disable-network-policy=true"}},
		{"svc", []string{"-publish-not-ready-addresses=false"}},
		{"svc", []string{"--inject-hosts-env=false"}},
		{"ssh", []string{"--no-root"}},
		{"env", nil},
		{"ssh", []string{"--ssh-key-file-path=/home/user/.ssh"}},
		{"ssh", []string{"--ssh-private-key", "PRIV", "--ssh-public-key", "PUB"}},
		{"mpi", []string{"--master=mpimaster", "--worker=mpiworker", "--port=2222"}},
		{"pytorch", []string{"--master", "m", "--worker", "w", "--port", "23457"}},
		{"tensorflow", []string{"--ps=server", "--worker=trainer", "--chief=lead", "--evaluator=eval", "--port=5000"}},
	} {
		t.Run(tc.plugin+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			p, err := New(tc.plugin, tc.args, Env{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Name() != tc.plugin {
				t.Errorf("Name() = %q, want %q", p.Name(), tc.plugin)
			}
		})
	}
}
