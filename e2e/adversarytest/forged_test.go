package adversarytest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ringfire/ringfire/e2e/vcjob"
	"github.com/ringfire/ringfire/shard"
)

func init() {
	register(attack{name: "forged-slot-label", run: attackForgedSlot})
}

// The forged objects: counts.configMaps ConfigMaps of forgedKeys keys each
// (about 700 KB of JSON, about 7 MB once decoded into a Go map), and
// counts.others each of Services, PVCs and pods, whose annotations carry
// forgedAnnotationBytes; all labelled with the slot of another tenant's
// live Job. Made by forgeWorkers clients at once.
const (
	forgedKeys            = 60_000
	forgedAnnotationBytes = 200 << 10
	forgeWorkers          = 4
	// successorWatch is how long the successor of the killed holder is
	// watched as it lists the slot (issue 49 saw 1.88 GB within 20 s).
	successorWatch = 20 * time.Second
)

// attackForgedSlot is the tenant writing ringfire's slot label on objects of
// its own: a live Job of another namespace is found, its slot computed, and
// ConfigMaps, Services, PVCs and pods labelled with it. With ringfire's
// policies every create is refused, naming the label; without them the
// holder of the slot must keep each at a stub's cost. Then the holder is
// killed with SIGKILL, as a rollout's or a crash's would, so that a
// successor lists the slot, and started again in its cgroup so that it
// lists it once more when it has its slots back.
func attackForgedSlot(t *testing.T, w *world) {
	victimNS := vcjob.Namespace(t, w.kube, "victim")
	victim := vcjob.Create(t, w.volcano, vcjob.New(victimNS, "victim", vcjob.Task("worker", 2, "10m", "")))
	key := victimNS + "/" + victim.Name
	slot := shard.SlotOf(key, slots)
	w.aim("forged-slot-label", key)
	w.waitFor(t, "the victim Job has its pods", 2*time.Minute, func() (bool, string) {
		n := vcjob.PodsOf(t, w.kube, victimNS, victim.Name)
		return n == 2, fmt.Sprintf("%d pods", n)
	})
	label := map[string]string{shard.SlotLabel: strconv.Itoa(slot)}

	ns := w.namespace(t, "forged")
	began := time.Now()
	made, refused := w.forge(t, ns, label)
	t.Logf("forged objects on slot %d (victim %s): %d made, %d refused, in %v", slot, key, made, refused, time.Since(began).Round(time.Second))
	if w.flavor.policies && made > 0 {
		t.Errorf("%d objects labelled %s=%d by the tenant %s were admitted beside ringfire's policies; want every one refused", made, shard.SlotLabel, slot, tenantUser)
	}

	holder := w.holders(t)[slot]
	if holder == "" {
		t.Fatalf("no replica holds slot %d", slot)
	}
	if g := w.fleet.Group(holder); g != nil {
		// The forged objects have reached the holder's watch by now or soon:
		// a few seconds let its cache take the last of them.
		time.Sleep(3 * time.Second)
		usage, _ := g.Usage()
		t.Logf("holder %s of slot %d uses %d MiB before the kill", holder, slot, usage>>20)
	}
	w.killAndRestart(t, holder, slot)
}

// forge makes the forged objects in ns as the tenant, every one labelled,
// and counts those refused (a refusal must name the label) and, from the
// API server, those made: a create the API server timed out may have
// landed.
func (w *world) forge(t *testing.T, ns string, label map[string]string) (made, refused int) {
	t.Helper()
	var nMade, nRefused, nTimedOut atomic.Int64
	var badMu sync.Mutex
	var bad []string
	count := func(what string, err error) {
		switch {
		case err == nil:
			nMade.Add(1)
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			nRefused.Add(1)
			if !strings.Contains(err.Error(), shard.SlotLabel) {
				badMu.Lock()
				bad = append(bad, fmt.Sprintf("%s refused with a message that does not name %s: %v", what, shard.SlotLabel, err))
				badMu.Unlock()
			}
		case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
			nTimedOut.Add(1)
		default:
			badMu.Lock()
			bad = append(bad, fmt.Sprintf("create %s: %v", what, err))
			badMu.Unlock()
		}
	}
	body := configMapJSON(label)
	work := make(chan func(), forgeWorkers)
	var wg sync.WaitGroup
	for range forgeWorkers {
		wg.Go(func() {
			for f := range work {
				f()
			}
		})
	}
	big := padding("forged", forgedAnnotationBytes)
	n := attackCounts()
	for i := range n.configMaps {
		name := fmt.Sprintf("cm-%d", i)
		work <- func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := w.tenant.kube.CoreV1().RESTClient().Post().Namespace(ns).Resource("configmaps").
				SetHeader("Content-Type", "application/json").Body(body(name)).Do(ctx).Error()
			count("ConfigMap "+name, err)
		}
	}
	for i := range n.others {
		meta := func(kind string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", kind, i), Namespace: ns, Labels: label, Annotations: big}
		}
		work <- func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := w.tenant.kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
				ObjectMeta: meta("svc"),
				Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"forged": "yes"},
					Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}},
			}, metav1.CreateOptions{})
			count(fmt.Sprintf("Service svc-%d", i), err)
		}
		work <- func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := w.tenant.kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: meta("pvc"),
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}, metav1.CreateOptions{})
			count(fmt.Sprintf("PVC pvc-%d", i), err)
		}
		work <- func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			pod := &corev1.Pod{ObjectMeta: meta("pod"), Spec: vcjob.PodSpec(vcjob.CPU, vcjob.Memory)}
			// No scheduler serves it and no node matches: it stays Pending.
			pod.Spec.SchedulerName = "no-such-scheduler"
			pod.Spec.NodeSelector = map[string]string{"adversarytest.ringfire.io/none": "none"}
			_, err := w.tenant.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			count(fmt.Sprintf("pod pod-%d", i), err)
		}
	}
	close(work)
	wg.Wait()
	for _, b := range bad[:min(len(bad), 10)] {
		t.Error(b)
	}
	selector := metav1.FormatLabelSelector(metav1.SetAsLabelSelector(label))
	for _, resource := range []string{"configmaps", "services", "persistentvolumeclaims", "pods"} {
		n, err := w.count(ns, w.kube.CoreV1().RESTClient(), resource, selector)
		if err != nil {
			t.Errorf("count the forged %s: %v", resource, err)
		}
		made += n
	}
	if n := nTimedOut.Load(); n > 0 {
		t.Logf("%d creates timed out in the API server (%d answered as made); %d forged objects are there", n, nMade.Load(), made)
	}
	return made, int(nRefused.Load())
}

// configMapJSON returns a function that writes a ConfigMap of forgedKeys
// keys labelled label, named as asked: the JSON is built once, the keys
// four characters of base 36 with two-character values (about 12 bytes a
// key, 700 KB in all).
func configMapJSON(label map[string]string) func(name string) []byte {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`)
	head := b.String()
	b.Reset()
	b.WriteString(`","labels":{`)
	first := true
	for k, v := range label {
		if !first {
			b.WriteString(",")
		}
		first = false
		fmt.Fprintf(&b, "%q:%q", k, v)
	}
	b.WriteString(`}},"data":{`)
	for i := range forgedKeys {
		if i > 0 {
			b.WriteString(",")
		}
		k := strconv.FormatInt(int64(i), 36)
		fmt.Fprintf(&b, `"%s%s":"ab"`, strings.Repeat("0", 4-len(k)), k)
	}
	b.WriteString("}}")
	tail := b.String()
	return func(name string) []byte { return []byte(head + name + tail) }
}

// padding returns annotations of about n bytes in all: keys under the
// suite's own prefix, values of 2 KiB.
func padding(tag string, n int) map[string]string {
	const value = 2 << 10
	out := map[string]string{}
	for i := 0; i*value < n; i++ {
		out[fmt.Sprintf("adversarytest.ringfire.io/%s-%d", tag, i)] = strings.Repeat("x", value)
	}
	return out
}

// killAndRestart kills the holder of slot with SIGKILL, waits until another
// replica holds the slot and watches that successor list it, then starts
// the holder again in its cgroup and waits until the ring has settled.
func (w *world) killAndRestart(t *testing.T, holder string, slot int) {
	t.Helper()
	all := w.holders(t)
	k := kill{id: holder, held: map[int]bool{}}
	for n, id := range all {
		if id == holder {
			k.held[n] = true
		}
	}
	k.at = time.Now()
	w.fleet.Kill(t, holder)
	w.mu.Lock()
	w.kills = append(w.kills, k)
	i := len(w.kills) - 1
	w.mu.Unlock()
	t.Logf("killed %s, the holder of slot %d and %d others, with SIGKILL, %v into the world's load", holder, slot, len(k.held)-1, w.sinceLoad())

	var successor string
	w.waitFor(t, fmt.Sprintf("another replica holds slot %d", slot), time.Minute, func() (bool, string) {
		successor = w.holders(t)[slot]
		return successor != "" && successor != holder, "holder " + successor
	})
	took := time.Now()
	t.Logf("%s holds slot %d %v after the kill", successor, slot, took.Sub(k.at).Round(100*time.Millisecond))
	if g := w.fleet.Group(successor); g != nil {
		var most int64
		for time.Since(took) < successorWatch {
			w.requireAlive(t, fmt.Sprintf("%s listed slot %d", successor, slot))
			if u, err := g.Usage(); err == nil {
				most = max(most, u)
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("successor %s used at most %d MiB in the %v after it took slot %d", successor, most>>20, successorWatch, slot)
	}

	w.fleet.Restart(t, holder)
	if err := waitRing(w, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.kills[i].back = time.Now()
	w.mu.Unlock()
	t.Logf("%s started again; the ring settled %v after the kill", holder, time.Since(k.at).Round(100*time.Millisecond))
}
