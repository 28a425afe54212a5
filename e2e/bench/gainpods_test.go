package bench

// BenchmarkGainPods asks what caps a failover's gain: how fast a replica's
// pod stream for newly gained slots (cache.Sharded's reflector with the
// selector "ringfire.io/slot in (...)") fills, on an API server holding
// many pods, and whose CPU it costs. BenchmarkScale found the gained slots'
// pods to be the last part of every gain, at about 700 pods/s; this
// isolates that stream from the rest of a replica.
//
//	RINGFIRE_TOOLS_BIN=$(e2e/tools/build.sh | tail -1) RINGFIRE_E2E=1 \
//	  go test -run '^$' -bench BenchmarkGainPods -benchtime=1x -timeout 60m ./e2e/bench/
//
// Knobs: RINGFIRE_BENCH_GAIN_PODS (30000 pods, Running, the shape of a
// Volcano Job's pods, over 1,024 slots), RINGFIRE_BENCH_GAIN_SLOTS (341: a
// third of the ring, what each of 3 survivors gains when one of 4 dies, or
// roughly what each of 2 gains when one of 3 does), RINGFIRE_BENCH_GAIN_REPEAT (2),
// RINGFIRE_BENCH_GAIN_MODES (all; say "protobuf-cache" for one way of listing).
//
// Each gain runs in a process of its own (this test binary again, in
// TestGainPodsConsumer), so that its CPU time is its own, in each wire
// format, with client-go's watch-list (the initial events of a watch) and
// with a paginated list (the WatchListClient gate off).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ringfire/ringfire/cache"
	"github.com/ringfire/ringfire/e2e/cluster"
	"github.com/ringfire/ringfire/internal/replica"
	"github.com/ringfire/ringfire/shard"
)

// The consumer process's environment.
const (
	gainChildEnv      = "RINGFIRE_GAINPODS_CHILD" // "1" in the consumer
	gainKubeconfigEnv = "RINGFIRE_GAINPODS_KUBECONFIG"
	gainSlotsEnv      = "RINGFIRE_GAINPODS_SLOTS"   // gain slots [0, n)
	gainContentEnv    = "RINGFIRE_GAINPODS_CONTENT" // replica.ContentTypeProtobuf or ContentTypeJSON
	gainExpectEnv     = "RINGFIRE_GAINPODS_EXPECT"  // pods in those slots
	gainWatchListEnv  = "KUBE_FEATURE_WatchListClient"
	gainHowEnv        = "RINGFIRE_GAINPODS_HOW" // runGainConsumer's how
)

// gainRingSlots is the ring's size (ringfire's default slot count).
const gainRingSlots = 1024

// gainResult is what the consumer reports, as one JSON line.
type gainResult struct {
	Pods    int     `json:"pods"`
	Wall    float64 `json:"wall"`     // seconds from Gain to OnListed
	CPU     float64 `json:"cpu"`      // the consumer's CPU seconds over that time
	PeakRSS float64 `json:"peak_rss"` // the consumer's peak RSS (VmHWM), bytes: the gain's transient
	Live    float64 `json:"live"`     // its live heap after the list and a collection, bytes: what it keeps
}

func BenchmarkGainPods(b *testing.B) {
	bin := cluster.RequireTools(b)
	quietClientGo()
	pods := envCount(b, "RINGFIRE_BENCH_GAIN_PODS", 30000)
	slots := envCount(b, "RINGFIRE_BENCH_GAIN_SLOTS", gainRingSlots/3)
	repeat := envCount(b, "RINGFIRE_BENCH_GAIN_REPEAT", 2)
	if slots < 1 || slots > gainRingSlots {
		b.Fatalf("RINGFIRE_BENCH_GAIN_SLOTS=%d: want 1 to %d", slots, gainRingSlots)
	}
	// No fake nodes: the pods are bound to a node that does not exist, and
	// the pod garbage collector, which would delete them for it, is off.
	cl := cluster.StartForTest(b, cluster.Options{Nodes: -1, ToolsBin: bin,
		ControllerManagerArgs: []string{"--controllers=*,-pod-garbage-collector-controller"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 5000, 5000
	cfg, err := replica.BuiltinConfig(cfg, replica.ContentTypeProtobuf)
	if err != nil {
		b.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	const namespaces = 10
	nss := make([]string, namespaces)
	for i := range nss {
		nss[i] = fmt.Sprintf("gain-%02d", i)
	}
	if err := makeNamespaces(ctx, kube, nss, time.Minute); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	expect := 0
	var made atomic.Int64
	err = inParallel(16, pods, func(i int) error {
		p := gainPod(nss[i%namespaces], i)
		created, err := kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status = runningStatus(created, start)
		if _, err := kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if n := made.Add(1); n%5000 == 0 {
			gainLog(b, "%d pods made, %v", n, time.Since(start).Round(time.Second))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for i := range pods {
		if i%gainRingSlots < slots {
			expect++
		}
	}
	gainLog(b, "%d Running pods over %d slots made in %v; gaining %d slots = %d pods; load average %s",
		pods, gainRingSlots, time.Since(start).Round(time.Second), slots, expect, loadAverage())

	apiPID, _ := readPIDFile(cl.Dir() + "/" + string(cluster.APIServer) + ".pid")
	etcdPID, _ := readPIDFile(cl.Dir() + "/" + string(cluster.Etcd) + ".pid")
	type mode struct{ content, how string }
	modes := []mode{
		{replica.ContentTypeProtobuf, "watchlist"}, {replica.ContentTypeProtobuf, "list-rv0"}, {replica.ContentTypeProtobuf, "cache"},
		{replica.ContentTypeJSON, "watchlist"}, {replica.ContentTypeJSON, "cache"},
	}
	if only := os.Getenv("RINGFIRE_BENCH_GAIN_MODES"); only != "" {
		modes = slices.DeleteFunc(modes, func(m mode) bool { return !slices.Contains(strings.Split(only, ","), m.content+"-"+m.how) })
	}
	for r := range repeat {
		for _, m := range modes {
			name := m.content + "-" + m.how
			apiBefore, etcdBefore := procCPU(apiPID), procCPU(etcdPID)
			res, err := runGainConsumer(ctx, cl.Kubeconfig(), slots, expect, m.content, m.how)
			apiCPU, etcdCPU := procCPU(apiPID)-apiBefore, procCPU(etcdPID)-etcdBefore
			if err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			gainLog(b, "run %d %-25s %d pods in %.2f s = %.0f pods/s; consumer CPU %.2f s, peak RSS %.0f MiB, live heap after %.0f MiB; over the consumer's life kube-apiserver CPU %.2f s, etcd %.2f s; load average %s",
				r, name, res.Pods, res.Wall, float64(res.Pods)/res.Wall, res.CPU, res.PeakRSS/mib, res.Live/mib, apiCPU, etcdCPU, loadAverage())
			if res.Pods != expect {
				b.Errorf("%s: %d pods in the index, want %d", name, res.Pods, expect)
			}
			if r == 0 {
				b.ReportMetric(float64(res.Pods)/res.Wall, name+"-pods/s")
				b.ReportMetric(res.CPU, name+"-client-cpu-s")
				b.ReportMetric(apiCPU, name+"-apiserver-cpu-s")
				b.ReportMetric(res.PeakRSS/mib, name+"-peak-RSS-MiB")
				b.ReportMetric(res.Live/mib, name+"-live-MiB")
			}
		}
	}
}

// gainPod is pod i, in the shape of a Volcano Job's pod as ringfire makes it
// (labels, annotations, one container with requests and a few variables),
// in slot i mod gainRingSlots, bound to a node that does not exist.
func gainPod(ns string, i int) *corev1.Pod {
	job := fmt.Sprintf("gain-%05d", i/10)
	name := fmt.Sprintf("%s-worker-%d", job, i%10)
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{
				shard.SlotLabel:            strconv.Itoa(i % gainRingSlots),
				"volcano.sh/job-name":      job,
				"volcano.sh/job-namespace": ns,
				"volcano.sh/queue-name":    "default",
				"volcano.sh/task-spec":     "worker",
				"volcano.sh/job-version":   "0",
			},
			Annotations: map[string]string{
				"scheduling.k8s.io/group-name": job,
				"volcano.sh/job-name":          job,
				"volcano.sh/job-version":       "0",
				"volcano.sh/queue-name":        "default",
				"volcano.sh/task-spec":         "worker",
				"volcano.sh/task-index":        strconv.Itoa(i % 10),
				"volcano.sh/template-uid":      job + "-worker",
			},
		},
		Spec: corev1.PodSpec{
			NodeName:      "gain-node",
			SchedulerName: "volcano",
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "worker", Image: "registry.local/bench:1", Command: []string{"sleep", "3600"},
				Env: []corev1.EnvVar{
					{Name: "VK_TASK_INDEX", Value: strconv.Itoa(i % 10)},
					{Name: "VC_TASK_INDEX", Value: strconv.Itoa(i % 10)},
					{Name: "VC_WORKER_NUM", Value: "10"},
				},
				Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl},
			}},
		},
	}
}

// runningStatus is the status a kubelet reports for a running pod.
func runningStatus(p *corev1.Pod, at time.Time) corev1.PodStatus {
	t := metav1.NewTime(at)
	conds := []corev1.PodCondition{}
	for _, c := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		conds = append(conds, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: t})
	}
	return corev1.PodStatus{
		Phase: corev1.PodRunning, Conditions: conds, HostIP: "10.0.0.1", PodIP: "10.244.0.1",
		HostIPs: []corev1.HostIP{{IP: "10.0.0.1"}}, PodIPs: []corev1.PodIP{{IP: "10.244.0.1"}},
		StartTime: &t, QOSClass: corev1.PodQOSGuaranteed,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: p.Spec.Containers[0].Name, Ready: true, Started: new(true), Image: p.Spec.Containers[0].Image,
			ImageID:     "registry.local/bench@sha256:0000000000000000000000000000000000000000000000000000000000000000",
			ContainerID: "containerd://" + strings.Repeat("0", 64),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		}},
	}
}

func procCPU(pid int) float64 {
	u, err := readProc(pid)
	if err != nil {
		return math.NaN()
	}
	return u.cpuSeconds
}

// runGainConsumer runs one gain in a process of its own and returns its
// report.
// how is "cache" (cache.Sharded, as a replica gains slots), "watchlist" (a
// reflector at client-go's default: the initial objects as the events of a
// watch) or "list-rv0" (a reflector that lists whatever the API server's
// cache holds, as informers did before the watch-list).
func runGainConsumer(ctx context.Context, kubeconfig string, slots, expect int, content, how string) (gainResult, error) {
	var res gainResult
	exe, err := os.Executable()
	if err != nil {
		return res, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe, "-test.run=^TestGainPodsConsumer$", "-test.v")
	cmd.Env = append(os.Environ(), gainChildEnv+"=1", gainKubeconfigEnv+"="+kubeconfig, gainSlotsEnv+"="+strconv.Itoa(slots),
		gainExpectEnv+"="+strconv.Itoa(expect), gainContentEnv+"="+content,
		gainWatchListEnv+"="+strconv.FormatBool(how == "watchlist"), gainHowEnv+"="+how)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() { _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "GAINPODS RESULT "):
			err := json.Unmarshal([]byte(strings.TrimPrefix(line, "GAINPODS RESULT ")), &res)
			return res, err
		case strings.HasPrefix(line, "GAINPODS ERROR "):
			return res, errors.New(strings.TrimPrefix(line, "GAINPODS ERROR "))
		}
	}
	return res, fmt.Errorf("the consumer ended without a result: %v", sc.Err())
}

// TestGainPodsConsumer is BenchmarkGainPods' consumer process; it does
// nothing unless the benchmark started it.
func TestGainPodsConsumer(t *testing.T) {
	if os.Getenv(gainChildEnv) != "1" {
		t.Skip("the consumer process of BenchmarkGainPods")
	}
	quietClientGo()
	res, err := consumeGain()
	if err != nil {
		fmt.Printf("GAINPODS ERROR %v\n", err)
		return
	}
	line, _ := json.Marshal(res)
	fmt.Printf("GAINPODS RESULT %s\n", line)
}

// consumeGain gains slots [0, n) of the pods, as a replica's cache does, and
// waits until their first list has landed.
func consumeGain() (gainResult, error) {
	var res gainResult
	n, err1 := strconv.Atoi(os.Getenv(gainSlotsEnv))
	expect, err2 := strconv.Atoi(os.Getenv(gainExpectEnv))
	if err := errors.Join(err1, err2); err != nil {
		return res, err
	}
	base, err := clientcmd.BuildConfigFromFlags("", os.Getenv(gainKubeconfigEnv))
	if err != nil {
		return res, err
	}
	base.QPS, base.Burst = 200, 400 // a replica's defaults
	cfg, err := replica.BuiltinConfig(base, os.Getenv(gainContentEnv))
	if err != nil {
		return res, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return res, err
	}
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return kube.CoreV1().Pods("").List(ctx, o)
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return kube.CoreV1().Pods("").Watch(ctx, o)
	}
	slots := make([]int, n)
	for i := range slots {
		slots[i] = i
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	listed := make(chan struct{})
	var count func() int
	var gain func()
	switch how := os.Getenv(gainHowEnv); how {
	case "cache":
		pods := cache.NewSharded("pods", func() runtime.Object { return &corev1.Pod{} }, cache.ListWatchFunc{List: list, Watch: watchFn}, hclog.NewNullLogger())
		pods.OnListed(func([]int) { close(listed) })
		defer pods.Stop()
		count = func() int { return len(pods.Indexer().List()) }
		gain = func() { pods.Gain(ctx, slots) }
	case "watchlist", "list-rv0":
		sel := shard.SlotLabel + " in (" + joinSlots(slots) + ")"
		lw := &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.LabelSelector = sel
				return list(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.LabelSelector = sel
				return watchFn(ctx, o)
			},
		}
		store := &listedStore{Store: toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), listed: listed}
		var lwi toolscache.ListerWatcher = lw
		if how == "list-rv0" {
			lwi = noWatchList{lw}
		}
		r := toolscache.NewReflector(lwi, &corev1.Pod{}, store, 0)
		count = func() int { return len(store.List()) }
		gain = func() { go r.RunWithContext(ctx) }
	default:
		return res, fmt.Errorf("%s=%q: want cache, watchlist or list-rv0", gainHowEnv, how)
	}
	cpu0, start := cpuSelf(), time.Now()
	gain()
	select {
	case <-listed:
	case <-ctx.Done():
		return res, fmt.Errorf("slots not listed after 5m: %d of %d pods", count(), expect)
	}
	res.Wall, res.CPU = time.Since(start).Seconds(), cpuSelf()-cpu0
	res.Pods = count()
	if u, err := readProc(os.Getpid()); err == nil {
		res.PeakRSS = u.peakRSS
	}
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	res.Live = float64(ms.HeapAlloc)
	return res, nil
}

// noWatchList is a ListerWatcher that client-go's reflector lists the way
// it did before the watch-list.
type noWatchList struct{ *toolscache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// listedStore closes listed at its first Replace: the reflector's first list.
type listedStore struct {
	toolscache.Store
	listed chan struct{}
	once   sync.Once
}

func (s *listedStore) Replace(items []any, rv string) error {
	err := s.Store.Replace(items, rv)
	s.once.Do(func() { close(s.listed) })
	return err
}

func joinSlots(slots []int) string {
	parts := make([]string, len(slots))
	for i, n := range slots {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// gainLog prints a line of the benchmark's report to stdout, where the
// testing package's log of a benchmark would cut it short.
func gainLog(_ *testing.B, format string, args ...any) {
	fmt.Printf("gainpods: "+format+"\n", args...)
}
