// Command screenshot takes docs/status-page.png: a replica's status page in
// the middle of a handover, as headless Chromium draws it at 900×800.
//
// It starts `ringfire dev up` (a local control plane, three replicas on
// ports 48080–48082), puts Jobs on it for load, then pauses ringfire-2
// (SIGSTOP) and starts a fourth replica, ringfire-3: ringfire-0 and
// ringfire-1 hand their share to ringfire-3 at once, while ringfire-2's
// share stays in motion until its lease runs out. The page of ringfire-0 is
// saved at that moment and Chromium screenshots the saved copy, so the
// picture does not depend on how fast Chromium starts. Chromium is Debian's
// package, installed with apt-get when missing (as root).
//
//	go run ./hack/screenshot -out docs/status-page.png
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/internal/devcluster"
)

func main() {
	out := flag.String("out", "docs/status-page.png", "the PNG to write")
	dir := flag.String("dir", ".ringfire/screenshot", "state directory: the dev cluster, logs, the saved page")
	port := flag.Int("port", 48080, "status page port of the first replica; the next ones count up from it")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *out, *dir, *port); err != nil {
		fmt.Fprintln(os.Stderr, "screenshot:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, dir string, port int) error {
	chromium, err := findChromium()
	if err != nil {
		return err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	bin := filepath.Join(dir, "ringfire")
	logf("building %s", bin)
	if err := command("go", "build", "-o", bin, "./cmd/ringfire").Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}

	for i := range 4 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+i))
		if err != nil {
			return fmt.Errorf("the replicas' ports %d-%d must be free (-port): %w", port, port+3, err)
		}
		ln.Close()
	}
	dev, err := startDev(ctx, bin, filepath.Join(dir, "dev"), port)
	if err != nil {
		return err
	}
	defer dev.stop()
	page := fmt.Sprintf("http://127.0.0.1:%d/", port)
	if _, err := waitStatus(ctx, page, time.Minute, "three replicas, every slot held as assigned", func(s status) bool {
		return s.Ready && len(s.Members) == 3 && len(s.Handover) == 0 && len(s.Unowned) == 0 && s.Holders != nil
	}); err != nil {
		return err
	}

	loadCtx, stopLoad := context.WithCancel(ctx)
	var loadDone sync.WaitGroup
	loadDone.Add(1)
	go func() { defer loadDone.Done(); load(loadCtx, dev.kubeconfig, 400) }()
	defer func() { stopLoad(); loadDone.Wait() }()
	logf("creating Jobs for 20s, for the controllers' rates and the Jobs by phase")
	for range 20 { // the page's rates are between two of its views: look once a second
		if _, err := readStatus(page); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}

	paused := dev.replicaPIDs["ringfire-2"]
	if paused == 0 {
		return errors.New("dev up did not say the pid of ringfire-2")
	}
	logf("pausing ringfire-2 (pid %d) and starting ringfire-3", paused)
	if err := syscall.Kill(paused, syscall.SIGSTOP); err != nil {
		return err
	}
	defer syscall.Kill(paused, syscall.SIGCONT)
	fourth, err := startReplica(bin, dev, "ringfire-3", port+3)
	if err != nil {
		return err
	}
	defer fourth.stop()
	if _, err := waitStatus(ctx, page, 15*time.Second, "ringfire-3 holding slots while ringfire-2 hands over", func(s status) bool {
		held3 := 0
		for _, h := range s.Holders {
			if h == "ringfire-3" {
				held3++
			}
		}
		return len(s.Members) == 4 && held3 > 0 && len(s.Handover) > 0
	}); err != nil {
		return err
	}
	saved := filepath.Join(dir, "status-page.html")
	if err := save(page, saved); err != nil {
		return err
	}
	logf("saved ringfire-0's page mid-handover to %s", saved)
	return screenshot(ctx, chromium, "file://"+saved, out, dir)
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "screenshot: "+format+"\n", args...) }

func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd
}

// findChromium finds Debian's chromium, installing it when missing.
func findChromium() (string, error) {
	if path, err := exec.LookPath("chromium"); err == nil {
		return path, nil
	}
	if os.Geteuid() != 0 {
		return "", errors.New("no chromium on PATH; install Debian's package (apt-get install chromium) as root, or run this as root")
	}
	logf("installing Debian's chromium")
	install := func() error {
		cmd := command("apt-get", "install", "-y", "--no-install-recommends", "chromium", "fonts-dejavu-core")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.Run()
	}
	if err := install(); err != nil {
		if err := command("apt-get", "update").Run(); err != nil {
			return "", fmt.Errorf("apt-get update: %w", err)
		}
		if err := install(); err != nil {
			return "", fmt.Errorf("apt-get install chromium: %w", err)
		}
	}
	return exec.LookPath("chromium")
}

// devCluster is a running `ringfire dev up`.
type devCluster struct {
	cmd         *exec.Cmd
	dir         string
	etcd        string // the ring's etcd
	kubeconfig  string // the admin's
	replicaPIDs map[string]int
	exited      chan struct{}
}

var (
	etcdLine    = regexp.MustCompile(`ring status --etcd-endpoints (\S+)`)
	kubeLine    = regexp.MustCompile(`export KUBECONFIG=(\S+)`)
	replicaLine = regexp.MustCompile(`started replica: id=(\S+) pid=(\d+)`)
)

// startDev starts `ringfire dev up` and waits until it says the cluster is
// up, reading the ring's etcd, the kubeconfig and the replicas' pids off its
// output.
func startDev(ctx context.Context, bin, dir string, port int) (*devCluster, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	logPath := dir + ".log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	d := &devCluster{dir: dir, replicaPIDs: map[string]int{}, exited: make(chan struct{})}
	d.cmd = exec.Command(bin, "dev", "up", "-dir", dir, "-port", strconv.Itoa(port))
	d.cmd.Stdout, d.cmd.Stderr = io.MultiWriter(logFile, pw), io.MultiWriter(logFile, pw)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	logf("starting %s dev up (log %s)", bin, logPath)
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.cmd.Wait(); pw.Close(); logFile.Close(); close(d.exited) }()
	up := make(chan struct{})
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(pr)
		closed := false
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			if m := etcdLine.FindStringSubmatch(line); m != nil {
				d.etcd = m[1]
			}
			if m := kubeLine.FindStringSubmatch(line); m != nil {
				d.kubeconfig = m[1]
			}
			if m := replicaLine.FindStringSubmatch(line); m != nil {
				d.replicaPIDs[m[1]], _ = strconv.Atoi(m[2])
			}
			if strings.Contains(line, "Ctrl-C stops everything") && !closed {
				close(up)
				closed = true
			}
			mu.Unlock()
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case <-up:
		mu.Lock()
		defer mu.Unlock()
		if d.etcd == "" || d.kubeconfig == "" {
			d.stop()
			return nil, fmt.Errorf("dev up did not print the ring's etcd and the kubeconfig (log %s)", logPath)
		}
		return d, nil
	case <-d.exited:
		return nil, fmt.Errorf("dev up exited (log %s)", logPath)
	case <-time.After(4 * time.Minute):
		d.stop()
		return nil, fmt.Errorf("dev up not up within 4 minutes (log %s)", logPath)
	case <-ctx.Done():
		d.stop()
		return nil, ctx.Err()
	}
}

// stop asks dev up to stop everything it started, and kills it if it has
// not within a minute.
func (d *devCluster) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-d.exited:
	case <-time.After(time.Minute):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.exited
	}
}

// replica is a `ringfire run` process this program started.
type replica struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startReplica starts one more replica of dev's ring, with its status page
// on port and its probes on port+100, as dev up places them.
func startReplica(bin string, dev *devCluster, id string, port int) (*replica, error) {
	args := []string{"run", "--id", id, "--etcd-endpoints", dev.etcd,
		"--kubeconfig", filepath.Join(dev.dir, "ringfire-serviceaccount.kubeconfig"),
		"--controllers", "job,queue,podgroup,cronjob,scheduler",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", port+100)}
	logFile, err := os.Create(filepath.Join(dev.dir, id+".log"))
	if err != nil {
		return nil, err
	}
	r := &replica{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start replica %s: %w", id, err)
	}
	go func() { r.cmd.Wait(); logFile.Close(); close(r.exited) }()
	return r, nil
}

// stop asks the replica to leave the ring, and kills it if it has not
// within 15s.
func (r *replica) stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.exited
	}
}

// status is the part of /status.json the program waits on.
type status struct {
	Ready             bool
	Members, Holders  []string
	Handover, Unowned []int
}

// waitStatus reads the replica's /status.json every 100ms until ok accepts
// it, or fails after limit.
func waitStatus(ctx context.Context, page string, limit time.Duration, what string, ok func(status) bool) (status, error) {
	deadline := time.Now().Add(limit)
	var last status
	var lastErr error
	for time.Now().Before(deadline) {
		s, err := readStatus(page)
		if err == nil {
			last = s
			if ok(s) {
				return s, nil
			}
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if lastErr != nil {
		return last, fmt.Errorf("no %s within %v: %w", what, limit, lastErr)
	}
	return last, fmt.Errorf("no %s within %v: last status %d members, %d slots handing over, %d unowned",
		what, limit, len(last.Members), len(last.Handover), len(last.Unowned))
}

func readStatus(page string) (status, error) {
	var s status
	resp, err := http.Get(page + "status.json")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("status.json: HTTP %d", resp.StatusCode)
	}
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// save writes the page as served to path.
func save(page, path string) error {
	resp, err := http.Get(page)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}

// screenshot has headless Chromium draw url at 900×800 into out, with a
// profile of its own and nothing fetched but the page.
func screenshot(ctx context.Context, chromium, url, out, dir string) error {
	profile, err := os.MkdirTemp(dir, "chromium-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	out, err = filepath.Abs(out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--window-size=900,800", "--hide-scrollbars", "--screenshot="+out, url)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard // Chromium's complaints about D-Bus and the like
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("chromium: %w", err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
		return fmt.Errorf("chromium wrote no screenshot at %s", out)
	}
	logf("wrote %s", out)
	return nil
}

// load creates up to n small Jobs, a few a second, until ctx is done: two
// tasks of pods that run for a few seconds on the fake nodes and succeed.
func load(ctx context.Context, kubeconfig string, n int) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		logf("load: %v", err)
		return
	}
	client, err := vcclient.NewForConfig(cfg)
	if err != nil {
		logf("load: %v", err)
		return
	}
	for i := range n {
		job := loadJob(fmt.Sprintf("load-%03d", i), fmt.Sprintf("%ds", 4+i%7))
		if _, err := client.BatchV1alpha1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
			logf("load: create %s: %v", job.Name, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(150 * time.Millisecond):
		}
	}
}

func loadJob(name, runFor string) *batch.Job {
	task := func(name string, replicas int32) batch.TaskSpec {
		return batch.TaskSpec{Name: name, Replicas: replicas, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{devcluster.PodDurationAnnotation: runFor}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
				Name: "main", Image: "example.invalid/batch:latest",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
			}}},
		}}
	}
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batch.JobSpec{SchedulerName: "volcano", MinAvailable: 3, Queue: "default",
			Tasks: []batch.TaskSpec{task("leader", 1), task("worker", 2)}},
	}
}
