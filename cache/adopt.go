package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/shard"
)

// Adoption labels the objects a Volcano Job owns that carry no slot label:
// those vc-controller-manager made before the cluster switched to ringfire.
// The slot reflectors cannot see them, so without it a Job in flight would
// stall (its creates meet AlreadyExists, its counts miss its pods).
//
// When slots are gained, the cache sweeps each owned resource once, before
// the slots become ready: a paginated, metadata-only list of the objects
// without the slot label (pods: only those with volcano.sh/job-name), kept
// when their controller is a Volcano Job of a gained slot whose UID matches
// the Job in the cache, each labelled by a JSON merge patch of the label and
// the object's UID (never re-created, never deleted). The labelled objects
// then enter the slot's reflectors; the slot becomes ready only once they
// are in the index, so the Job controller never acts on a partial view.
// Gains that arrive while a sweep runs are swept together next.
//
// A sweep lists the whole cluster's unlabelled objects, whatever their slot,
// and on a large cluster that list is the slowest part of a gain: the API
// server scans every pod to answer it. Once one sweep finds no unlabelled
// object of any Volcano Job anywhere, there is nothing left to adopt: every
// object ringfire makes carries the label, and vc-controller-manager's Job
// controllers do not run beside ringfire (docs/migration.md). From then on
// the replica skips the sweep of its gains, until it restarts; a replica
// started after Volcano ran again sweeps afresh. This is the migration's
// `--adopt=false` step, taken by itself.

// AdoptPageSize is how many objects one list page of a sweep asks for.
const AdoptPageSize = 500

// adoptWorkers is how many label patches a sweep has in flight.
const adoptWorkers = 8

// adoptIndexWait bounds how long a sweep waits for the objects it labelled
// to reach the index before it lets the slots become ready anyway (an object
// deleted right after its patch never arrives).
const adoptIndexWait = 30 * time.Second

// adoptGVR is the API resource of each owned resource.
var adoptGVR = map[Resource]schema.GroupVersionResource{
	Pods:            {Version: "v1", Resource: "pods"},
	PodGroups:       {Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"},
	PVCs:            {Version: "v1", Resource: "persistentvolumeclaims"},
	Services:        {Version: "v1", Resource: "services"},
	ConfigMaps:      {Version: "v1", Resource: "configmaps"},
	NetworkPolicies: {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
}

// AdoptSelector is the label selector of the objects of r a sweep lists:
// those without the slot label and, for pods, only the pods of Volcano Jobs.
// Volcano labels no other kind of a Job's objects in a way that names the Job
// (a PodGroup carries the Job's own labels; Services, ConfigMaps,
// NetworkPolicies and PVCs none), so for those the owner reference decides.
// Secrets are not swept: ringfire reaches a Job's Secret by name and needs no
// label on it (Owned).
func AdoptSelector(r Resource) string {
	if r == Pods {
		return batch.JobNameKey + ",!" + shard.SlotLabel
	}
	return "!" + shard.SlotLabel
}

// AdoptStats counts what the sweeps of a cache did.
type AdoptStats struct {
	Sweeps  uint64 // sweeps run
	Lists   uint64 // list requests (pages) made
	Listed  uint64 // unlabelled objects listed
	Patches uint64 // label patches sent
	Adopted uint64 // objects labelled
	Skipped uint64 // gains not swept: an earlier sweep found nothing left to adopt
	Clean   bool   // a sweep found no unlabelled object of a Volcano Job in the cluster
}

// adopter runs the sweeps of a cache.
type adopter struct {
	md    metadata.Interface
	valid func() error
	log   hclog.Logger
	c     *Cache

	mu      sync.Mutex
	pending map[int]uint64 // slot → generation of the gain to sweep for
	wake    chan struct{}

	sweeps, lists, listed, patches, adopted, skipped atomic.Uint64
	// clean: a sweep found nothing to adopt in the whole cluster; the
	// later gains skip theirs.
	clean atomic.Bool
}

func newAdopter(c *Cache, md metadata.Interface, valid func() error, log hclog.Logger) *adopter {
	return &adopter{md: md, valid: valid, log: log.Named("adopt"), c: c,
		pending: map[int]uint64{}, wake: make(chan struct{}, 1)}
}

func (a *adopter) stats() AdoptStats {
	return AdoptStats{Sweeps: a.sweeps.Load(), Lists: a.lists.Load(), Listed: a.listed.Load(),
		Patches: a.patches.Load(), Adopted: a.adopted.Load(), Skipped: a.skipped.Load(), Clean: a.clean.Load()}
}

// gain asks for a sweep of slots, each for the gain of the generation given.
func (a *adopter) gain(gens map[int]uint64) {
	a.mu.Lock()
	for n, g := range gens {
		a.pending[n] = g
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// run sweeps what gain asked for, one sweep at a time, until ctx ends.
func (a *adopter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		}
		a.mu.Lock()
		gens := a.pending
		a.pending = map[int]uint64{}
		a.mu.Unlock()
		if len(gens) == 0 {
			continue
		}
		if a.clean.Load() {
			a.skipped.Add(1)
			a.c.adoptedSlots(gens)
			continue
		}
		// The sweep keeps an object only if its Job, with that UID, is in the cache: at
		// start-up the slots are held before the Jobs' first list, and a sweep then would
		// find no Job and leave everything unlabelled, every slot ready on a partial view.
		if !a.awaitJobs(ctx, gens) {
			return
		}
		labelled := a.sweep(ctx, gens)
		a.awaitIndex(ctx, gens, labelled)
		a.c.adoptedSlots(gens)
	}
}

// jobsPoll is how often a sweep looks whether the Jobs of its slots are listed.
const jobsPoll = 20 * time.Millisecond

// awaitJobs waits until the Jobs of every slot of gens still held by its gain are in the
// cache in full; false if ctx ended first.
func (a *adopter) awaitJobs(ctx context.Context, gens map[int]uint64) bool {
	t := time.NewTicker(jobsPoll)
	defer t.Stop()
	for !a.c.jobsListed(gens) {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// labelled is an object a sweep labelled: resource, key and slot.
type labelled struct {
	r    Resource
	key  string
	slot int
}

// sweep labels the unlabelled objects of the slots in gens, resource by
// resource, and returns those it labelled. A list that fails is tried again,
// backing off to 10 s, while any of the slots is still held by its gain: the
// slots wait, since their Jobs must not run on a partial view. A resource the
// replica may not list (Forbidden) or the API server does not serve
// (NotFound) is logged and skipped, so that the slots still become ready: its
// objects stay invisible, as they were before adoption existed.
func (a *adopter) sweep(ctx context.Context, gens map[int]uint64) []labelled {
	a.sweeps.Add(1)
	start := time.Now()
	var out []labelled
	clean := true // nothing unlabelled of a Volcano Job anywhere, so far
	for _, r := range Owned {
		var found []found
		var volcanos int
		backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: math.MaxInt32, Cap: 10 * time.Second}
		for {
			var err error
			found, volcanos, err = a.list(ctx, r, gens)
			if err == nil || ctx.Err() != nil || !a.anyCurrent(gens) {
				// Clean is what the last try found: a list that timed out and then
				// succeeded says nothing against it.
				clean = clean && err == nil && volcanos == 0
				break
			}
			if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
				clean = false
				a.log.Error("cannot list unlabelled objects to adopt; objects Volcano made of this kind stay invisible to ringfire",
					"resource", r, "error", err)
				break
			}
			d := backoff.Step()
			a.log.Warn("cannot list unlabelled objects to adopt; trying again", "resource", r, "in", d, "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		out = append(out, a.label(ctx, r, found, gens)...)
	}
	if len(out) > 0 {
		a.log.Info("adopted objects made before ringfire", "slots", len(gens), "objects", len(out), "took", time.Since(start).Round(time.Millisecond))
	}
	if clean && ctx.Err() == nil && !a.clean.Swap(true) {
		a.log.Info("nothing left to adopt in the cluster: the next gains are not swept", "took", time.Since(start).Round(time.Millisecond))
	}
	return out
}

// anyCurrent reports whether any slot of gens is still held by its gain and
// not ready.
func (a *adopter) anyCurrent(gens map[int]uint64) bool {
	for n, g := range gens {
		if a.c.gainCurrent(n, g) {
			return true
		}
	}
	return false
}

// found is an unlabelled object a sweep will label.
type found struct {
	namespace, name string
	uid             types.UID
	slot            int
}

// list returns the unlabelled objects of r whose controller is a Volcano Job
// of a slot in gens, with the UID of the Job the cache holds, and how many
// unlabelled objects of Volcano Jobs it saw in all (any slot, any UID).
func (a *adopter) list(ctx context.Context, r Resource, gens map[int]uint64) ([]found, int, error) {
	n := a.c.slotCount()
	var out []found
	volcanos := 0
	opts := metav1.ListOptions{LabelSelector: AdoptSelector(r), Limit: AdoptPageSize}
	for {
		a.lists.Add(1)
		page, err := a.md.Resource(adoptGVR[r]).Namespace(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, volcanos, fmt.Errorf("list unlabelled %s: %w", r, err)
		}
		a.listed.Add(uint64(len(page.Items)))
		for i := range page.Items {
			m := &page.Items[i]
			ref := metav1.GetControllerOfNoCopy(m)
			if ref == nil || ref.Kind != "Job" || !strings.HasPrefix(ref.APIVersion, batch.GroupName+"/") {
				continue
			}
			volcanos++
			key := toolscache.NewObjectName(m.Namespace, ref.Name).String()
			slot := shard.SlotOf(key, n)
			if _, ok := gens[slot]; !ok {
				continue
			}
			if uid, ok := a.c.jobs.uid(key); !ok || uid != ref.UID {
				continue // its Job is gone or was re-created: the garbage collector's, not ours
			}
			out = append(out, found{namespace: m.Namespace, name: m.Name, uid: m.UID, slot: slot})
		}
		if page.Continue == "" {
			return out, volcanos, nil
		}
		opts.Continue = page.Continue
	}
}

// label sets the slot label on each object of objs whose gain is still
// current, adoptWorkers at a time, and returns those it labelled.
func (a *adopter) label(ctx context.Context, r Resource, objs []found, gens map[int]uint64) []labelled {
	if len(objs) == 0 {
		return nil
	}
	work := make(chan found)
	var (
		mu  sync.Mutex
		out []labelled
		wg  sync.WaitGroup
	)
	for range min(adoptWorkers, len(objs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				if !a.c.gainCurrent(f.slot, gens[f.slot]) {
					continue // lost since: its next owner adopts it
				}
				if err := a.patch(ctx, r, f); err != nil {
					if !errors.Is(err, shard.ErrNotOwner) && ctx.Err() == nil {
						a.log.Warn("cannot label an object to adopt", "resource", r, "object", toolscache.NewObjectName(f.namespace, f.name).String(), "error", err)
					}
					continue
				}
				mu.Lock()
				out = append(out, labelled{r: r, key: toolscache.NewObjectName(f.namespace, f.name).String(), slot: f.slot})
				mu.Unlock()
			}
		}()
	}
	for _, f := range objs {
		if ctx.Err() != nil {
			break
		}
		work <- f
	}
	close(work)
	wg.Wait()
	a.adopted.Add(uint64(len(out)))
	return out
}

// patch labels one object: a JSON merge patch of the label alone, fenced like
// every write, and bound to the object's UID so that it never lands on an
// object re-created under the same name. Gone or re-created is not an error.
func (a *adopter) patch(ctx context.Context, r Resource, f found) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":    f.uid,
		"labels": map[string]string{shard.SlotLabel: fmt.Sprint(f.slot)},
	}})
	if err != nil {
		return err
	}
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 4}
	for {
		if err := shard.CheckOwner(ctx, a.valid); err != nil {
			return err
		}
		a.patches.Add(1)
		_, err = a.md.Resource(adoptGVR[r]).Namespace(f.namespace).Patch(ctx, f.name, types.MergePatchType, body, metav1.PatchOptions{})
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			return nil // deleted, or another object of that name now: nothing to adopt
		case backoff.Steps <= 1 || !retriable(err):
			return fmt.Errorf("label %s %s/%s with slot %d: %w", r, f.namespace, f.name, f.slot, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff.Step()):
		}
	}
}

// retriable reports whether a failed write may succeed when tried again.
func retriable(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err)
}

// awaitIndex waits until every object the sweep labelled is in its
// resource's index (or its slot's gain is over), at most adoptIndexWait.
func (a *adopter) awaitIndex(ctx context.Context, gens map[int]uint64, objs []labelled) {
	deadline := time.Now().Add(adoptIndexWait)
	for len(objs) > 0 {
		rest := objs[:0]
		for _, o := range objs {
			if o.r == Pods {
				// A slot's pods are listed only once its sweep is done
				// (clearLocked): that list, a consistent read, has them.
				continue
			}
			if _, ok, _ := a.c.owned[o.r].Indexer().GetByKey(o.key); !ok && a.c.gainCurrent(o.slot, gens[o.slot]) {
				rest = append(rest, o)
			}
		}
		objs = rest
		if len(objs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			a.log.Warn("objects labelled for adoption have not reached the cache; the slots go ready without them", "objects", len(objs))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
