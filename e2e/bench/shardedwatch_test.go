package bench

// BenchmarkShardedWatch evaluates Kubernetes 1.36's alpha ShardedListAndWatch
// (KEP-5866) on Volcano Jobs, a custom resource: what a replica receives and
// decodes when it lists and watches every Job (what ringfire's replicas do)
// against a list and watch with a shard selector over 1/k of the FNV-1a hash
// range of metadata.uid. docs/sharded-watch.md has the results.
//
//	RINGFIRE_TOOLS_BIN=$(e2e/tools/build.sh | tail -1) RINGFIRE_E2E=1 GOFLAGS=-p=1 \
//	  go test -run '^$' -bench BenchmarkShardedWatch -benchtime=1x -timeout 30m ./e2e/bench/
//
// Knobs: RINGFIRE_BENCH_SHARD_JOBS (5000), RINGFIRE_BENCH_SHARD_NAMESPACES
// (10), RINGFIRE_BENCH_SHARD_KS ("3,6"), RINGFIRE_BENCH_SHARD_REPEAT (1).
//
// The consumer runs in a process of its own (this test binary again, in
// TestShardedWatchConsumer), so that its CPU time is its own and not the
// load generator's: it lists, watches from the list's resourceVersion, and
// reports bytes received, objects decoded and its CPU time for the list and
// for the burst of updates the benchmark then makes (one annotation patch per
// Job).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/ringfire/ringfire/deploy/crds"
	"github.com/ringfire/ringfire/e2e/cluster"
)

// The consumer process's environment.
const (
	shardChildEnv      = "RINGFIRE_SHARDWATCH_CHILD" // "1" in the consumer
	shardKubeconfigEnv = "RINGFIRE_SHARDWATCH_KUBECONFIG"
	shardSelectorEnv   = "RINGFIRE_SHARDWATCH_SELECTOR" // "" for a full list and watch
	shardExpectEnv     = "RINGFIRE_SHARDWATCH_EXPECT"   // watch events to wait for
	shardRangeEnv      = "RINGFIRE_SHARDWATCH_RANGE"    // "start,end" of the uid hash range, decimal, for checking
)

// shardGate is the API server flag that turns the feature on.
const shardGate = "--feature-gates=ShardedListAndWatch=true"

// parityLabel is on every benchmark Job, "even" or "odd" by its index: a
// label selector to combine with a shard selector.
const parityLabel = "bench.ringfire.io/parity"

// consumerResult is what the consumer process reports, as one JSON line.
type consumerResult struct {
	ListItems      int     `json:"listItems"`
	ListBytes      int64   `json:"listBytes"`
	ListCPU        float64 `json:"listCPU"` // seconds, user + system
	ListWall       float64 `json:"listWall"`
	ShardInfo      string  `json:"shardInfo"` // the list's metadata.shardInfo.selector, "" when absent
	ListOutOfRange int     `json:"listOutOfRange"`
	Events         int     `json:"events"`
	EventBytes     int64   `json:"eventBytes"`
	BurstCPU       float64 `json:"burstCPU"`  // from the watch's start to its last expected event
	BurstWall      float64 `json:"burstWall"` // from the first event to the last expected one
	OutOfRange     int     `json:"outOfRange"`
	Extra          int     `json:"extra"` // events past the expected count, in a grace period
	TimedOut       bool    `json:"timedOut"`
}

func BenchmarkShardedWatch(b *testing.B) {
	bin := cluster.RequireTools(b)
	quietClientGo()
	jobs := envCount(b, "RINGFIRE_BENCH_SHARD_JOBS", 5000)
	namespaces := envCount(b, "RINGFIRE_BENCH_SHARD_NAMESPACES", 10)
	ks := envInts(b, "RINGFIRE_BENCH_SHARD_KS", "3,6")
	repeat := envCount(b, "RINGFIRE_BENCH_SHARD_REPEAT", 1)
	b.Run(fmt.Sprintf("gate=on/jobs=%d", jobs), func(b *testing.B) {
		benchShardedWatch(b, bin, jobs, namespaces, ks, repeat)
	})
	b.Run("gate=off", func(b *testing.B) { shardSelectorWithoutGate(b, bin) })
}

func benchShardedWatch(b *testing.B, bin string, jobs, namespaces int, ks []int, repeat int) {
	cl := cluster.StartForTest(b, cluster.Options{Nodes: -1, ToolsBin: bin, APIServerArgs: []string{shardGate}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := crds.Install(ctx, cl.RESTConfig()); err != nil {
		b.Fatal(err)
	}
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 5000, 5000
	vc := vcclient.NewForConfigOrDie(cfg)
	nss := make([]string, namespaces)
	for i := range nss {
		nss[i] = fmt.Sprintf("shard-%02d", i)
	}
	if err := makeNamespaces(ctx, cl.Clientset(), nss, time.Minute); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	created, err := createShardJobs(ctx, vc, nss, jobs)
	if err != nil {
		b.Fatal(err)
	}
	shardLog(b, "created %d Jobs in %d namespaces in %v; %d CPUs, load average %s", jobs, namespaces,
		time.Since(start).Round(time.Millisecond), runtime.NumCPU(), loadAverage())
	defer func() { shardLog(b, "load average at the end %s", loadAverage()) }()

	checkShardSemantics(ctx, b, vc, created, ks)

	apiPID, _ := readPIDFile(cl.Dir() + "/" + string(cluster.APIServer) + ".pid")
	type mode struct {
		name       string
		k          int
		start, end uint64 // the uid hash range [start, end); end 0 is 2^64
	}
	modes := []mode{{name: "full", k: 1}}
	for _, k := range ks {
		modes = append(modes, mode{name: fmt.Sprintf("uid-1of%d", k), k: k, end: math.MaxUint64/uint64(k) + 1})
	}
	round := 0
	for r := range repeat {
		for _, m := range modes {
			sel, expect := "", len(created)
			if m.k > 1 {
				sel = uidRange(m.start, m.end)
				expect = 0
				for _, j := range created {
					if inRange(fnv64a(string(j.UID)), m.start, m.end) {
						expect++
					}
				}
			}
			round++
			res, apiList, err := runConsumer(ctx, cl.Kubeconfig(), sel, expect, m.start, m.end, apiPID, func() error {
				return patchAll(ctx, vc, created, round)
			})
			if err != nil {
				b.Fatalf("%s: %v", m.name, err)
			}
			shardLog(b, "run %d %-9s selector=%q: list %d items, %.2f MB, client CPU %.3f s, wall %.3f s, API server CPU %.3f s; shardInfo=%q; "+
				"burst %d/%d events, %.2f MB, client CPU %.3f s, wall %.3f s; out of range: list %d, events %d; extra %d; timed out %v",
				r, m.name, sel, res.ListItems, float64(res.ListBytes)/1e6, res.ListCPU, res.ListWall, apiList, res.ShardInfo,
				res.Events, expect, float64(res.EventBytes)/1e6, res.BurstCPU, res.BurstWall, res.ListOutOfRange, res.OutOfRange, res.Extra, res.TimedOut)
			if res.TimedOut || res.Events != expect || res.OutOfRange > 0 || res.ListOutOfRange > 0 || res.ListItems != expect {
				b.Errorf("%s: the selector's list and events are not the range's objects: %+v (want %d)", m.name, res, expect)
			}
			if r == 0 {
				b.ReportMetric(float64(res.ListBytes+res.EventBytes)/1e6, m.name+"-MB")
				b.ReportMetric(res.ListCPU, m.name+"-list-cpu-s")
				b.ReportMetric(res.BurstCPU, m.name+"-burst-cpu-s")
				b.ReportMetric(float64(res.ListItems+res.Events), m.name+"-decoded")
			}
		}
	}
	if body, err := cl.APIServerMetrics(ctx); err == nil {
		for _, line := range strings.Split(body, "\n") {
			if strings.Contains(line, "watch_shards_total") || strings.Contains(line, "watch_filtered_events_total") ||
				(strings.HasPrefix(line, "apiserver_cache_list_total") && strings.Contains(line, "jobs")) {
				if !strings.HasPrefix(line, "#") {
					shardLog(b, "metric %s", line)
				}
			}
		}
	}
}

// createShardJobs creates n Jobs, spread over namespaces, each labelled by
// the parity of its index, from 8 goroutines; it returns them as created.
func createShardJobs(ctx context.Context, vc vcclient.Interface, namespaces []string, n int) ([]*batch.Job, error) {
	out := make([]*batch.Job, n)
	err := inParallel(8, n, func(i int) error {
		job := benchJob(namespaces[i%len(namespaces)], jobName(i), 1, time.Hour)
		job.Labels = map[string]string{parityLabel: []string{"even", "odd"}[i%2]}
		var err error
		for attempt := range 5 {
			if attempt > 0 {
				time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
			}
			if out[i], err = vc.BatchV1alpha1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err == nil {
				return nil
			}
		}
		return fmt.Errorf("create job %s: %w", job.Name, err)
	})
	return out, err
}

// patchAll changes one annotation of every Job, from 8 goroutines.
func patchAll(ctx context.Context, vc vcclient.Interface, jobs []*batch.Job, round int) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"bench.ringfire.io/round":"%d"}}}`, round))
	next := make(chan *batch.Job)
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				if _, err := vc.BatchV1alpha1().Jobs(j.Namespace).Patch(ctx, j.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					failed.Store(fmt.Errorf("patch %s/%s: %w", j.Namespace, j.Name, err))
				}
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	return nil
}

// checkShardSemantics checks, in this process, what the selector does
// beyond a plain uid range: a namespace range, a label selector combined
// with a shard selector, ORed ranges, a watch-list (sendInitialEvents), and
// which selectors the API server refuses, with its exact words.
func checkShardSemantics(ctx context.Context, b *testing.B, vc vcclient.Interface, created []*batch.Job, ks []int) {
	b.Helper()
	jobs := vc.BatchV1alpha1().Jobs("")
	k := ks[0]
	end := math.MaxUint64/uint64(k) + 1
	count := func(pred func(j *batch.Job) bool) int {
		n := 0
		for _, j := range created {
			if pred(j) {
				n++
			}
		}
		return n
	}
	uidIn := func(j *batch.Job, s, e uint64) bool { return inRange(fnv64a(string(j.UID)), s, e) }
	list := func(what string, opts metav1.ListOptions, want int) {
		l, err := jobs.List(ctx, opts)
		if err != nil {
			b.Errorf("%s: %v", what, err)
			return
		}
		info := "absent"
		if l.ShardInfo != nil {
			info = fmt.Sprintf("%q", l.ShardInfo.Selector)
		}
		shardLog(b, "check %s: %d items (want %d), shardInfo %s", what, len(l.Items), want, info)
		if len(l.Items) != want {
			b.Errorf("%s: %d items, want %d", what, len(l.Items), want)
		}
	}
	list("uid range 1/k", metav1.ListOptions{ShardSelector: uidRange(0, end)}, count(func(j *batch.Job) bool { return uidIn(j, 0, end) }))
	list("uid range 1/k, from etcd (resourceVersion of a list, Exact)", func() metav1.ListOptions {
		l, err := jobs.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		return metav1.ListOptions{ShardSelector: uidRange(0, end), ResourceVersion: l.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact}
	}(), count(func(j *batch.Job) bool { return uidIn(j, 0, end) }))
	list("uid range 1/k, paged by 100 (first page)", metav1.ListOptions{ShardSelector: uidRange(0, end), Limit: 100},
		min(100, count(func(j *batch.Job) bool { return uidIn(j, 0, end) })))
	list("uid range 1/k + label parity=even", metav1.ListOptions{ShardSelector: uidRange(0, end), LabelSelector: parityLabel + "=even"},
		count(func(j *batch.Job) bool { return uidIn(j, 0, end) && j.Labels[parityLabel] == "even" }))
	// Two ranges ORed: [0, end) and [2·end, 3·end) when k ≥ 3.
	if k >= 3 {
		s2, e2 := 2*end, 3*end
		if k == 3 {
			e2 = 0
		}
		list("two uid ranges ORed", metav1.ListOptions{ShardSelector: uidRange(0, end) + " || " + uidRange(s2, e2)},
			count(func(j *batch.Job) bool { return uidIn(j, 0, end) || uidIn(j, s2, e2) }))
	}
	half := uint64(1) << 63
	list("namespace range [0, 2^63)", metav1.ListOptions{ShardSelector: fmt.Sprintf("shardRange(object.metadata.namespace, '%s', '%s')", hex64(0), hex64(half))},
		count(func(j *batch.Job) bool { return fnv64a(j.Namespace) < half }))

	// A watch-list: the initial events are the range's objects too.
	func() {
		t := true
		w, err := jobs.Watch(ctx, metav1.ListOptions{ShardSelector: uidRange(0, end), SendInitialEvents: &t, AllowWatchBookmarks: true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil {
			b.Errorf("watch-list: %v", err)
			return
		}
		defer w.Stop()
		n, out := 0, 0
		timeout := time.After(time.Minute)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					b.Errorf("watch-list ended early")
					return
				}
				j, _ := ev.Object.(*batch.Job)
				if ev.Type == watch.Bookmark {
					if j != nil && j.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
						want := count(func(j *batch.Job) bool { return uidIn(j, 0, end) })
						shardLog(b, "check watch-list (sendInitialEvents) uid range 1/k: %d initial events (want %d), %d out of range", n, want, out)
						if n != want || out > 0 {
							b.Errorf("watch-list: %d initial events, %d out of range, want %d", n, out, want)
						}
						return
					}
					continue
				}
				if ev.Type == watch.Added && j != nil {
					n++
					if !uidIn(j, 0, end) {
						out++
					}
				}
			case <-timeout:
				b.Errorf("watch-list: no end of initial events within a minute (%d seen)", n)
				return
			}
		}
	}()

	// Refused selectors, with the API server's words.
	for _, sel := range []string{
		"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.labels, '0x0000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && true",
	} {
		_, err := jobs.List(ctx, metav1.ListOptions{ShardSelector: sel})
		if err == nil {
			shardLog(b, "check refused? %s: accepted", sel)
			continue
		}
		shardLog(b, "check refused %s: status %d: %v", sel, statusCode(err), err)
	}
}

// shardSelectorWithoutGate checks what an API server without the feature
// gate does with a shard selector on Jobs.
func shardSelectorWithoutGate(b *testing.B, bin string) {
	cl := cluster.StartForTest(b, cluster.Options{Nodes: -1, ToolsBin: bin})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := crds.Install(ctx, cl.RESTConfig()); err != nil {
		b.Fatal(err)
	}
	vc := vcclient.NewForConfigOrDie(cl.RESTConfig())
	if err := makeNamespaces(ctx, cl.Clientset(), []string{"shard-00"}, time.Minute); err != nil {
		b.Fatal(err)
	}
	created, err := createShardJobs(ctx, vc, []string{"shard-00"}, 20)
	if err != nil {
		b.Fatal(err)
	}
	end := uint64(1) << 62
	want := 0
	for _, j := range created {
		if fnv64a(string(j.UID)) < end {
			want++
		}
	}
	for _, sel := range []string{uidRange(0, end), "shardRange(object.metadata.name, '0x0', 'junk')"} {
		l, err := vc.BatchV1alpha1().Jobs("").List(ctx, metav1.ListOptions{ShardSelector: sel})
		if err != nil {
			shardLog(b, "check gate off, %s: status %d: %v", sel, statusCode(err), err)
			continue
		}
		shardLog(b, "check gate off, %s: %d items of %d (%d in range), shardInfo present %v", sel, len(l.Items), len(created), want, l.ShardInfo != nil)
	}
}

func statusCode(err error) int32 {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return s.Status().Code
	}
	return 0
}

// runConsumer runs the consumer process with selector sel, and burst once
// it watches; it returns the consumer's report and the API server's CPU
// seconds over the consumer's list.
func runConsumer(ctx context.Context, kubeconfig, sel string, expect int, start, end uint64, apiPID int,
	burst func() error) (consumerResult, float64, error) {
	var res consumerResult
	exe, err := os.Executable()
	if err != nil {
		return res, 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe, "-test.run=^TestShardedWatchConsumer$", "-test.v")
	cmd.Env = append(os.Environ(), shardChildEnv+"=1", shardKubeconfigEnv+"="+kubeconfig, shardSelectorEnv+"="+sel,
		shardExpectEnv+"="+strconv.Itoa(expect), shardRangeEnv+"="+strconv.FormatUint(start, 10)+","+strconv.FormatUint(end, 10))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return res, 0, err
	}
	if err := cmd.Start(); err != nil {
		return res, 0, err
	}
	defer func() { _ = cmd.Wait() }()
	apiCPU := func() float64 {
		u, err := readProc(apiPID)
		if err != nil {
			return math.NaN()
		}
		return u.cpuSeconds
	}
	var apiStart, apiList float64
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "SHARDWATCH LISTING":
			apiStart = apiCPU()
		case line == "SHARDWATCH LISTED":
			apiList = apiCPU() - apiStart
		case line == "SHARDWATCH WATCHING":
			if err := burst(); err != nil {
				return res, apiList, err
			}
		case strings.HasPrefix(line, "SHARDWATCH RESULT "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "SHARDWATCH RESULT ")), &res); err != nil {
				return res, apiList, err
			}
			_, _ = io.Copy(io.Discard, out)
			return res, apiList, nil
		case strings.HasPrefix(line, "SHARDWATCH ERROR "):
			return res, apiList, errors.New(strings.TrimPrefix(line, "SHARDWATCH ERROR "))
		}
	}
	return res, apiList, fmt.Errorf("the consumer ended without a result: %v", sc.Err())
}

// TestShardedWatchConsumer is BenchmarkShardedWatch's consumer process; it
// does nothing unless the benchmark started it.
func TestShardedWatchConsumer(t *testing.T) {
	if os.Getenv(shardChildEnv) != "1" {
		t.Skip("the consumer process of BenchmarkShardedWatch")
	}
	quietClientGo()
	res, err := consume()
	if err != nil {
		fmt.Printf("SHARDWATCH ERROR %v\n", err)
		return
	}
	line, _ := json.Marshal(res)
	fmt.Printf("SHARDWATCH RESULT %s\n", line)
}

func consume() (consumerResult, error) {
	var res consumerResult
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(shardKubeconfigEnv))
	if err != nil {
		return res, err
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	var received atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &received} })
	vc, err := vcclient.NewForConfig(cfg)
	if err != nil {
		return res, err
	}
	sel := os.Getenv(shardSelectorEnv)
	expect, _ := strconv.Atoi(os.Getenv(shardExpectEnv))
	var start, end uint64
	if _, err := fmt.Sscanf(os.Getenv(shardRangeEnv), "%d,%d", &start, &end); err != nil {
		return res, err
	}
	check := func(j *batch.Job) bool { return sel == "" || inRange(fnv64a(string(j.UID)), start, end) }
	jobs := vc.BatchV1alpha1().Jobs("")
	ctx := context.Background()

	fmt.Println("SHARDWATCH LISTING")
	cpu0, t0, b0 := cpuSelf(), time.Now(), received.Load()
	list, err := jobs.List(ctx, metav1.ListOptions{ShardSelector: sel})
	if err != nil {
		return res, fmt.Errorf("list: %w", err)
	}
	res.ListCPU, res.ListWall, res.ListBytes = cpuSelf()-cpu0, time.Since(t0).Seconds(), received.Load()-b0
	fmt.Println("SHARDWATCH LISTED")
	res.ListItems = len(list.Items)
	if list.ShardInfo != nil {
		res.ShardInfo = list.ShardInfo.Selector
	}
	for i := range list.Items {
		if !check(&list.Items[i]) {
			res.ListOutOfRange++
		}
	}

	b1, cpu1 := received.Load(), cpuSelf()
	w, err := jobs.Watch(ctx, metav1.ListOptions{ShardSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return res, fmt.Errorf("watch: %w", err)
	}
	defer w.Stop()
	fmt.Println("SHARDWATCH WATCHING")
	var first time.Time
	timeout := time.NewTimer(5 * time.Minute)
	grace := (<-chan time.Time)(nil)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return res, errors.New("the watch ended")
			}
			if ev.Type == watch.Error {
				return res, fmt.Errorf("watch error: %v", apierrors.FromObject(ev.Object))
			}
			j, ok := ev.Object.(*batch.Job)
			if !ok {
				continue
			}
			if first.IsZero() {
				first = time.Now()
			}
			if res.Events >= expect {
				res.Extra++
			} else {
				res.Events++
			}
			if !check(j) {
				res.OutOfRange++
			}
			if res.Events == expect && grace == nil {
				res.BurstCPU, res.BurstWall, res.EventBytes = cpuSelf()-cpu1, time.Since(first).Seconds(), received.Load()-b1
				grace = time.After(3 * time.Second)
			}
		case <-grace:
			return res, nil
		case <-timeout.C:
			res.TimedOut = true
			res.BurstCPU, res.EventBytes = cpuSelf()-cpu1, received.Load()-b1
			return res, nil
		}
	}
}

// countingTransport counts the bytes of response bodies as they are read
// (after any gzip decoding by net/http: what the decoder reads).
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{resp.Body, c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// cpuSelf is this process's user + system CPU seconds.
func cpuSelf() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// fnv64a is the hash ShardedListAndWatch ranges over (FNV-1a, 64 bits, of
// the field's string: k8s.io/apimachinery/pkg/sharding.HashField).
func fnv64a(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// inRange is start ≤ h < end, with end 0 standing for 2^64.
func inRange(h, start, end uint64) bool { return h >= start && (end == 0 || h < end) }

// hex64 is a bound as the selector takes it: '0x' and 16 hex digits.
func hex64(v uint64) string { return fmt.Sprintf("0x%016x", v) }

// uidRange is the selector of the uid hash range [start, end), end 0 for 2^64.
func uidRange(start, end uint64) string {
	e := "0x10000000000000000"
	if end != 0 {
		e = hex64(end)
	}
	return fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", hex64(start), e)
}

// shardLog logs to b and to standard error at once: `go test -bench` keeps
// only the first lines of a benchmark's log, and these are the results.
func shardLog(b *testing.B, format string, args ...any) {
	b.Helper()
	b.Logf(format, args...)
	fmt.Fprintf(os.Stderr, "shardedwatch: "+format+"\n", args...)
}
