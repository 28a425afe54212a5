package etcdloop_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringfire/ringfire/internal/etcdloop"
	"github.com/ringfire/ringfire/internal/faultproxy"
	"github.com/ringfire/ringfire/internal/localetcd"
	"github.com/ringfire/ringfire/internal/logbuf"
)

// follower records what a Follow reports as a map of key to value.
type follower struct {
	mu      sync.Mutex
	keys    map[string]string
	reads   int
	rev     int64
	changed chan struct{} // gets a value after each callback
	onRead  func(n int)   // called after the n-th read, before it returns
	stopAt  string        // a Changed that brings this key asks to stop
}

func newFollower() *follower { return &follower{changed: make(chan struct{}, 100)} }

func (f *follower) read(kvs []*mvccpb.KeyValue, rev int64) bool {
	f.mu.Lock()
	f.keys = map[string]string{}
	for _, kv := range kvs {
		f.keys[string(kv.Key)] = string(kv.Value)
	}
	f.reads++
	n := f.reads
	f.rev = rev
	f.mu.Unlock()
	if f.onRead != nil {
		f.onRead(n)
	}
	f.changed <- struct{}{}
	return true
}

func (f *follower) change(events []*clientv3.Event, rev int64) bool {
	f.mu.Lock()
	stop := false
	for _, ev := range events {
		if ev.Type == clientv3.EventTypeDelete {
			delete(f.keys, string(ev.Kv.Key))
		} else {
			f.keys[string(ev.Kv.Key)] = string(ev.Kv.Value)
		}
		stop = stop || string(ev.Kv.Key) == f.stopAt
	}
	f.rev = rev
	f.mu.Unlock()
	f.changed <- struct{}{}
	return !stop
}

// await waits until cond holds of the keys and the count of full reads.
func (f *follower) await(t *testing.T, what string, cond func(keys map[string]string, reads int) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		ok := f.keys != nil && cond(f.keys, f.reads)
		keys, reads := f.keys, f.reads
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-f.changed:
		case <-deadline:
			t.Fatalf("%s: not within 10s; keys %v after %d reads", what, keys, reads)
		}
	}
}

// Follow reads the keys, then passes on the watch's events; when the watch
// breaks (here: the revision it resumes from is compacted) it reads all the
// keys again. A callback that returns false ends Run.
func TestFollowReadsThenWatchesAndReadsAgainAfterABreak(t *testing.T) {
	etcd := localetcd.StartForTest(t)
	client := localetcd.ClientForTest(t, etcd.Endpoint())
	ctx := context.Background()
	if _, err := client.Put(ctx, "/f/a", "1"); err != nil {
		t.Fatal(err)
	}
	f := newFollower()
	f.stopAt = "/f/stop"
	// Between the first read and the watch that follows it, two writes and
	// a compaction up to the second: the watch cannot start from the
	// revision after the read and breaks at once.
	f.onRead = func(n int) {
		if n != 1 {
			return
		}
		if _, err := client.Put(ctx, "/f/b", "1"); err != nil {
			t.Error(err)
			return
		}
		put, err := client.Put(ctx, "/f/b", "2") // compacted up to here: the first put's revision is gone
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := client.Compact(ctx, put.Header.Revision); err != nil {
			t.Error(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		etcdloop.Follow{Client: client, Prefix: "/f/", What: "test keys", Read: f.read, Changed: f.change}.Run(ctx)
	}()
	f.await(t, "the read after the break", func(keys map[string]string, reads int) bool {
		return reads >= 2 && keys["/f/a"] == "1" && keys["/f/b"] == "2"
	})
	if _, err := client.Put(ctx, "/f/c", "3"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Delete(ctx, "/f/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx, "/other", "x"); err != nil {
		t.Fatal(err)
	}
	f.await(t, "the watched changes", func(keys map[string]string, _ int) bool {
		_, a := keys["/f/a"]
		return !a && keys["/f/c"] == "3" && len(keys) == 2
	})
	if _, err := client.Put(ctx, "/f/stop", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of a callback asking it to stop")
	}
}

// A read that fails is logged and tried again after the backoff until it
// succeeds.
func TestFollowRetriesAFailedRead(t *testing.T) {
	etcd := localetcd.StartForTest(t)
	proxy, err := faultproxy.New(strings.TrimPrefix(etcd.Endpoint(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	client := localetcd.ClientForTest(t, "http://"+proxy.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := client.Put(ctx, "/f/a", "1"); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	logs := &logbuf.Buffer{}
	f := newFollower()
	done := make(chan struct{})
	go func() {
		defer close(done)
		etcdloop.Follow{
			Client: client, Prefix: "/f/", What: "test keys",
			ReadTimeout: 200 * time.Millisecond, Retry: etcdloop.Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
			Log:  hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn}),
			Read: f.read, Changed: f.change,
		}.Run(ctx)
	}()
	time.Sleep(time.Second)
	f.mu.Lock()
	reads := f.reads
	f.mu.Unlock()
	if reads != 0 {
		t.Fatalf("%d reads succeeded through a cut", reads)
	}
	if n := strings.Count(logs.String(), "cannot read test keys; will retry"); n < 2 {
		t.Fatalf("%d failed reads logged in 1s with a read timeout of 200ms; the log:\n%s", n, logs.String())
	}
	proxy.Heal()
	f.await(t, "the read after the cut heals", func(keys map[string]string, reads int) bool {
		return reads == 1 && keys["/f/a"] == "1"
	})
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context ending")
	}
}
