package shard_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ringfire/ringfire/shard"
)

func TestCheckOwner(t *testing.T) {
	live, ended := context.Background(), func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}()
	fenced := func() error { return errors.New("fenced") }
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		valid func() error
		ok    bool
	}{
		{"live slot, no check", live, nil, true},
		{"live slot, valid member", live, func() error { return nil }, true},
		{"slot lost", ended, nil, false},
		{"member past its fence deadline", live, fenced, false},
	} {
		err := shard.CheckOwner(tc.ctx, tc.valid)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, shard.ErrNotOwner)) {
			t.Errorf("%s: CheckOwner = %v, want ok=%v (or ErrNotOwner)", tc.name, err, tc.ok)
		}
	}
}

// Writes are refused unsent while the member is not valid; reads pass.
func TestFenceWritesStopsWritesAtTheTransport(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	var invalid atomic.Bool
	client := &http.Client{Transport: shard.FenceWrites(func() error {
		if invalid.Load() {
			return errors.New("fence deadline passed")
		}
		return nil
	})(http.DefaultTransport)}
	send := func(method string) error {
		req, err := http.NewRequest(method, srv.URL+"/api/v1/namespaces/ns/pods", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	for _, m := range methods {
		if err := send(m); err != nil {
			t.Errorf("valid member: %s failed: %v", m, err)
		}
	}
	if n := got.Load(); n != int32(len(methods)) {
		t.Fatalf("server saw %d requests, want %d", n, len(methods))
	}
	invalid.Store(true)
	got.Store(0)
	if err := send(http.MethodGet); err != nil {
		t.Errorf("fenced member: a read failed: %v", err)
	}
	for _, m := range methods[1:] {
		err := send(m)
		if !errors.Is(err, shard.ErrNotOwner) {
			t.Errorf("fenced member: %s = %v, want ErrNotOwner", m, err)
		}
	}
	if n := got.Load(); n != 1 {
		t.Errorf("server saw %d requests from a fenced member, want only the read", n)
	}
}
