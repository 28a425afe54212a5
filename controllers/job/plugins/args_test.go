package plugins

import (
	"reflect"
	"strings"
	"testing"
)

// Only what no pod could be made with is an error: an unknown plugin, a port out of range on a
// container or Service, an empty mount path or image.
func TestNewRefusesWhatNoPodCanUse(t *testing.T) {
	for _, tc := range []struct {
		plugin string
		args   []string
		want   string // a part of the error
	}{
		{"horovod", nil, `unknown plugin "horovod" (known: env, hcclrank, mpi, pytorch, ray, ssh, svc, tensorflow)`},
		{"mpi", []string{"--port=0"}, "plugin mpi: --port=0 is not a port number"},
		// The flag package stores 0 when a number does not parse, as in Volcano, whose pods then
		// open port 0 and are refused.
		{"mpi", []string{"--port=ssh"}, "plugin mpi: --port=0 is not a port number"},
		{"pytorch", []string{"--port=70000"}, "plugin pytorch: --port=70000 is not a port number"},
		{"ray", []string{"--dashboardPort=-1"}, "plugin ray: --dashboardPort=-1 is not a port number"},
		{"ray", []string{"--clientPort=65536"}, "plugin ray: --clientPort=65536 is not a port number"},
		{"pytorch", []string{"--wait-master-enabled", "--wait-master-image="}, "plugin pytorch: --wait-master-image is empty"},
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

// Every flag of every plugin, in Volcano's spellings, with Volcano's defaults; and what Volcano
// skips (an unknown flag, a bad value, a stray word, -h) is skipped with what follows it, the
// flags before it taking effect.
func TestArguments(t *testing.T) {
	for _, tc := range []struct {
		plugin  string
		args    []string
		want    Plugin
		ignored string // a part of Ignored(); "" when nothing is ignored
	}{
		// env takes none, and ignores any.
		{"env", nil, env{}, ""},
		{"env", []string{"--index=3"}, env{}, "the plugin takes no arguments"},

		{"svc", nil, &svc{injectHostsEnv: true}, ""},
		{"svc", []string{"--publish-not-ready-addresses", "--disable-network-policy=true", "--inject-hosts-env=false"},
			&svc{publishNotReadyAddresses: true, disableNetworkPolicy: true}, ""},
		{"svc", []string{"-publish-not-ready-addresses=false", "-disable-network-policy"},
			&svc{disableNetworkPolicy: true, injectHostsEnv: true}, ""},
		{"svc", []string{"--disable-network-policy", "--no-such-flag", "--publish-not-ready-addresses"},
			&svc{disableNetworkPolicy: true, injectHostsEnv: true},
			"flag provided but not defined: -no-such-flag: it and the arguments after it are ignored " +
				"(the plugin takes --disable-network-policy, --inject-hosts-env, --publish-not-ready-addresses)"},
		{"svc", []string{"--publish-not-ready-addresses=maybe"}, &svc{injectHostsEnv: true}, "invalid boolean value"},
		{"svc", []string{"publish-not-ready-addresses", "--disable-network-policy"}, &svc{injectHostsEnv: true},
			`"publish-not-ready-addresses" is not a flag`},

		{"ssh", nil, &sshPlugin{path: "/root/.ssh", port: 22}, ""},
		{"ssh", []string{"--ssh-key-file-path=/home/user/.ssh", "--ssh-port=2222", "--ssh-private-key", "PRIV", "--ssh-public-key", "PUB"},
			&sshPlugin{path: "/home/user/.ssh", port: 2222, privateKey: "PRIV", publicKey: "PUB"}, ""},
		{"ssh", []string{"--no-root", "--ssh-port=2222"}, &sshPlugin{path: "/root/.ssh", port: 22},
			"flag provided but not defined: -no-root"},
		{"ssh", []string{"--ssh-port=70000"}, &sshPlugin{path: "/root/.ssh", port: 22}, "--ssh-port=70000 is not a port number: 22 is used"},
		{"ssh", []string{"--ssh-port=ssh"}, &sshPlugin{path: "/root/.ssh", port: 22}, "--ssh-port=0 is not a port number: 22 is used"},
		{"ssh", []string{"--ssh-private-key=KEY"}, &sshPlugin{path: "/root/.ssh", port: 22, privateKey: "KEY"}, ""},
		{"ssh", []string{"--ssh-public-key=KEY"}, &sshPlugin{path: "/root/.ssh", port: 22, publicKey: "KEY"},
			"--ssh-public-key without --ssh-private-key is ignored"},

		{"mpi", nil, &mpi{master: "master", worker: "worker", port: 22}, ""},
		{"mpi", []string{"--master=mpimaster", "--worker=mpiworker", "--port=2222"},
			&mpi{master: "mpimaster", worker: "mpiworker", port: 2222}, ""},
		{"mpi", []string{"--master="}, &mpi{worker: "worker", port: 22}, ""},

		{"pytorch", nil, &pytorch{master: "master", worker: "worker", port: 23456, waitImage: "busybox:1.36.1", waitTimeout: 300}, ""},
		{"pytorch", []string{"--master", "m", "--worker", "w", "--port", "23457", "--wait-master-enabled",
			"--wait-master-image=alpine:3", "--wait-master-timeout=60"},
			&pytorch{master: "m", worker: "w", port: 23457, wait: true, waitImage: "alpine:3", waitTimeout: 60}, ""},
		{"pytorch", []string{"--port=29500", "-h", "--master=m"},
			&pytorch{master: "master", worker: "worker", port: 29500, waitImage: "busybox:1.36.1", waitTimeout: 300},
			"help was asked for: it and the arguments after it are ignored (the plugin takes --master=<value>, --port=<value>, " +
				"--wait-master-enabled, --wait-master-image=<value>, --wait-master-timeout=<value>, --worker=<value>)"},

		{"tensorflow", nil, &tensorflow{ps: "ps", worker: "worker", chief: "chief", evaluator: "evaluator", port: 2222}, ""},
		{"tensorflow", []string{"--ps=server", "--worker=trainer", "--chief=lead", "--evaluator=eval", "--port=5000"},
			&tensorflow{ps: "server", worker: "trainer", chief: "lead", evaluator: "eval", port: 5000}, ""},
		{"tensorflow", []string{"--port=70000"}, &tensorflow{ps: "ps", worker: "worker", chief: "chief", evaluator: "evaluator", port: 70000}, ""},

		{"ray", nil, &ray{head: "head", headContainer: "head", worker: "worker", workerContainer: "worker",
			gcsPort: 6379, dashboardPort: 8265, clientPort: 10001}, ""},
		{"ray", []string{"--head=h", "--headContainer=hc", "--worker=w", "--workerContainer=wc", "--port=7000",
			"--dashboardPort=7001", "--clientPort=7002"},
			&ray{head: "h", headContainer: "hc", worker: "w", workerContainer: "wc", gcsPort: 7000, dashboardPort: 7001, clientPort: 7002}, ""},
		// The spelling of Volcano's guide, which its plugin does not know.
		{"ray", []string{"--port=7000", "--clientServerPort=7002", "--dashboardPort=7001"},
			&ray{head: "head", headContainer: "head", worker: "worker", workerContainer: "worker",
				gcsPort: 7000, dashboardPort: 8265, clientPort: 10001}, "flag provided but not defined: -clientServerPort"},

		{"hcclrank", nil, &hcclrank{master: "master", worker: "worker"}, ""},
		{"hcclrank", []string{"--master=m", "--worker=w"}, &hcclrank{master: "m", worker: "w"}, ""},
		{"hcclrank", []string{"--worker=w", "--rank=3", "--master=m"}, &hcclrank{master: "master", worker: "w"},
			"flag provided but not defined: -rank"},
	} {
		t.Run(tc.plugin+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			p, err := New(tc.plugin, tc.args, Env{})
			if err != nil {
				t.Fatal(err)
			}
			ignored := p.Ignored()
			switch {
			case tc.ignored == "" && ignored != nil:
				t.Errorf("ignored: %v", ignored)
			case tc.ignored != "" && (ignored == nil || !strings.Contains(ignored.Error(), tc.ignored)):
				t.Errorf("ignored: %v, want it to contain %q", ignored, tc.ignored)
			}
			if got := withoutIgnored(p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parsed:\n got  %+v\n want %+v", got, tc.want)
			}
		})
	}
}

// withoutIgnored is p with what Ignored reports zeroed, to compare with its expected fields.
func withoutIgnored(p Plugin) Plugin {
	switch p := p.(type) {
	case env:
		p.ignored = nil
		return p
	case *svc:
		p.ignored = nil
	case *sshPlugin:
		p.ignored = nil
	case *mpi:
		p.ignored = nil
	case *pytorch:
		p.ignored = nil
	case *tensorflow:
		p.ignored = nil
	case *ray:
		p.ignored = nil
	case *hcclrank:
		p.ignored = nil
	}
	return p
}
