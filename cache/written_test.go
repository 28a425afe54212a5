package cache_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringfire/ringfire/cache"
)

func cmAt(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
}

// Two writes in a row before the informer has seen the first: the cached
// version is older than both, and the newest written object wins until the
// informer catches up.
func TestWrittenChain(t *testing.T) {
	var w cache.Written[*corev1.ConfigMap]
	w.Remember("ns/x", "1", cmAt("2"))
	w.Remember("ns/x", "2", cmAt("3")) // computed from the written object
	for _, cached := range []string{"1", "2"} {
		if got := w.Latest("ns/x", cmAt(cached)); got.ResourceVersion != "3" {
			t.Errorf("cache at %s: got version %s, want the written 3", cached, got.ResourceVersion)
		}
	}
	if got := w.Latest("ns/x", cmAt("3")); got.ResourceVersion != "3" {
		t.Errorf("cache caught up: got %s", got.ResourceVersion)
	}
	if w.Len() != 0 {
		t.Error("the written object is still remembered after the cache caught up")
	}
	if got := w.Latest("ns/x", cmAt("7")); got.ResourceVersion != "7" {
		t.Errorf("cache ahead: got %s", got.ResourceVersion)
	}
}

// A write computed from a cached copy, not from the remembered one, starts a
// new chain: the older written object is superseded.
func TestWrittenNewChainAndForget(t *testing.T) {
	var w cache.Written[*corev1.ConfigMap]
	w.Remember("ns/x", "1", cmAt("2"))
	w.Remember("ns/x", "5", cmAt("6"))
	if got := w.Latest("ns/x", cmAt("1")); got.ResourceVersion != "1" {
		t.Errorf("cache at 1 after a write from 5: got %s, want the cached 1", got.ResourceVersion)
	}
	w.Remember("ns/x", "1", cmAt("2"))
	w.Forget("ns/x")
	if got := w.Latest("ns/x", cmAt("1")); got.ResourceVersion != "1" {
		t.Errorf("after Forget: got %s, want the cached 1", got.ResourceVersion)
	}
}
