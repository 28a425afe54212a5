package sidebyside

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ringfire/ringfire/e2e/procs"
	runprocs "github.com/ringfire/ringfire/internal/procs"
)

// VolcanoBinEnv names the environment variable that holds the directory of
// Volcano's programs: vc-controller-manager, vc-scheduler and vcctl.
const VolcanoBinEnv = "VOLCANO_BIN"

// VolcanoVerbosityEnv names an environment variable: a klog level (say 4) for Volcano's two
// programs, whose logs then say why they did what they did.
const VolcanoVerbosityEnv = "SIDEBYSIDE_VOLCANO_V"

// VolcanoBin returns the directory of Volcano's programs: $VOLCANO_BIN, else
// the one the project's CI unpacks beside the clone (its unpack script prints
// it on its last line). Without either the test is skipped, whatever
// $RINGFIRE_E2E says: Volcano is not part of ringfire's build.
func VolcanoBin(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(VolcanoBinEnv); dir != "" {
		return dir
	}
	script := filepath.Join(RepoRoot(t), "..", "shared", "volcano", "unpack.sh")
	if _, err := os.Stat(script); err != nil {
		t.Skipf("no Volcano programs: set $%s to a directory holding vc-controller-manager, vc-scheduler and vcctl "+
			"(built from github.com/volcano-sh/volcano at the commit docs/conformance.md names)", VolcanoBinEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, script).Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	dir, err := lastLine(string(out))
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return dir
}

// RepoRoot is the root of ringfire's checkout: the nearest directory above
// the working directory (a test's package directory) holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// StartVolcano starts a control plane and real Volcano against it:
// vc-controller-manager (the job, queue, PodGroup, CronJob and garbage
// collection controllers) and vc-scheduler with e2e/conformance's
// configuration, both without leader election, as the admin. Volcano's
// webhooks are not run: ringfire's CRD rules and admission policies stand in
// for them, as on the ringfire side. It returns once the scheduler has
// opened the default Queue (its first cycle ran) and stops both when the
// test ends.
func StartVolcano(t testing.TB, bin string) *Env {
	t.Helper()
	env := startControlPlane(t, "volcano")
	installSchedulerOnlyCRDs(t, env)
	kubeconfig := env.Cluster.Kubeconfig()
	conf := filepath.Join(RepoRoot(t), "e2e", "conformance", "vc-scheduler.conf")
	start := func(name string, args ...string) {
		port, err := procs.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--kubeconfig", kubeconfig, "--leader-elect=false",
			"--listen-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if v := os.Getenv(VolcanoVerbosityEnv); v != "" {
			args = append(args, "-v", v)
		}
		p, err := startProcess(filepath.Join(bin, name), filepath.Join(env.LogDir, name+".log"), args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			p.stop()
			if t.Failed() {
				fmt.Fprintf(os.Stderr, "=== %s failed: %s log tail:\n%s\n", t.Name(), name, runprocs.Tail(p.log, 40))
			}
		})
	}
	start("vc-controller-manager",
		"--controllers", "job-controller,queue-controller,pg-controller,cronjob-controller,gc-controller")
	start("vc-scheduler", "--scheduler-conf", conf, "--cache-dumper=false")
	waitDefaultQueueOpen(t, env)
	return env
}

// schedulerOnlyKinds are the kinds vc-scheduler lists and watches, and waits for, that ringfire
// neither serves nor installs: group, version, kind, plural.
var schedulerOnlyKinds = [][4]string{
	{"nodeinfo.volcano.sh", "v1alpha1", "Numatopology", "numatopologies"},
}

// installSchedulerOnlyCRDs installs a CRD of each of schedulerOnlyKinds, cluster-scoped with an
// open schema: no object of them is ever made here, but vc-scheduler does not schedule until it
// has listed them.
func installSchedulerOnlyCRDs(t testing.TB, env *Env) {
	t.Helper()
	crds := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, k := range schedulerOnlyKinds {
		group, version, kind, plural := k[0], k[1], k[2], k[3]
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + "." + group},
			"spec": map[string]any{
				"group": group, "scope": "Cluster",
				"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
				"versions": []any{map[string]any{
					"name": version, "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				}},
			},
		}}
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD %s: %v", crd.GetName(), err)
		}
		gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
		for {
			if _, err := env.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{}); err == nil {
				break
			} else if ctx.Err() != nil {
				t.Fatalf("CRD %s not served: %v", crd.GetName(), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// waitDefaultQueueOpen waits until the default Queue's status says Open:
// Volcano's queue controller has synced, so Jobs submitted now are served.
func waitDefaultQueueOpen(t testing.TB, env *Env) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		q, err := env.Volcano.SchedulingV1beta1().Queues().Get(context.Background(), "default", metav1.GetOptions{})
		if err == nil && q.Status.State == "Open" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the default Queue is not Open a minute after Volcano started (last: %v, %+v)", err, q)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// process is one of Volcano's programs, in a process group of its own, dying
// with the test (Pdeathsig).
type process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func startProcess(bin, logPath string, args ...string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM to the process group, SIGKILL after 10 s, and waits.
func (p *process) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) (string, error) {
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	if last == "" {
		return "", errors.New("no output")
	}
	return last, nil
}
