package replica

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/rest"

	"github.com/ringfire/ringfire/internal/logbuf"
)

func TestAPIHealthTransitions(t *testing.T) {
	var h apiHealth
	t0 := time.Now()
	if err := h.Err(); err == nil || !strings.Contains(err.Error(), "not checked yet") {
		t.Fatalf("before any probe: %v, want not checked yet", err)
	}
	steps := []struct {
		err         error
		at          time.Duration
		wantChanged bool
		wantDownFor time.Duration
	}{
		{nil, 0, false, 0},                            // first answer: up, nothing to log
		{nil, time.Second, false, 0},                  // still up
		{errDown, 2 * time.Second, true, 0},           // goes down
		{errDown, 3 * time.Second, false, 0},          // still down
		{nil, 5 * time.Second, true, 3 * time.Second}, // back after 3s
	}
	for i, st := range steps {
		changed, downFor := h.set(st.err, t0.Add(st.at))
		if changed != st.wantChanged || downFor != st.wantDownFor {
			t.Errorf("step %d: changed %v down for %v, want %v %v", i, changed, downFor, st.wantChanged, st.wantDownFor)
		}
		if (h.Err() != nil) != (st.err != nil) {
			t.Errorf("step %d: Err() = %v after %v", i, h.Err(), st.err)
		}
	}
	var first apiHealth
	if changed, _ := first.set(errDown, t0); !changed {
		t.Error("a first probe that fails must be logged")
	}
}

var errDown = context.DeadlineExceeded

// The probe follows a server that stops answering /readyz and answers again,
// logging each change once.
func TestProbeAPIServer(t *testing.T) {
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/readyz" {
			http.NotFound(w, req)
			return
		}
		if failing.Load() {
			http.Error(w, "[+]ping ok\n[-]etcd failed: reason withheld\n[-]informer-sync failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close() // closed again below; a second Close is harmless
	var logs logbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	r := &Replica{cfg: Config{Kube: &rest.Config{Host: srv.URL}, Logger: log}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.probeAPIServer(ctx) }()
	defer func() { cancel(); <-done }()

	waitHealth := func(what string, up bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for (r.api.Err() == nil) != up {
			if time.Now().After(deadline) {
				t.Fatalf("%s: Err() = %v after 10s", what, r.api.Err())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitHealth("first probe", true)
	failing.Store(true)
	waitHealth("server not ready", false)
	if err := r.api.Err(); !strings.Contains(err.Error(), "not ready: failing checks etcd, informer-sync") {
		t.Errorf("reason %q does not say the API server is not ready", err)
	}
	failing.Store(false)
	waitHealth("server ready again", true)
	srv.Close()
	waitHealth("server gone", false)
	if err := r.api.Err(); !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("reason %q does not say the API server is unreachable", err)
	}
	out := logs.String()
	if strings.Count(out, "API server unreachable") != 2 || strings.Count(out, "API server answers again") != 1 {
		t.Errorf("want two lines for down and one for up, got:\n%s", out)
	}
}
