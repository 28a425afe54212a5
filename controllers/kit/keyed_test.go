package kit

import (
	"strings"
	"sync"
	"testing"
)

func TestKeyedForgetsByKeyAndBySlot(t *testing.T) {
	var k Keyed[int]
	if _, ok := k.Get("a/x"); ok {
		t.Fatal("the zero Keyed remembers a key")
	}
	k.Set("a/x", 1)
	k.Set("a/y", 2)
	k.Set("b/z", 3)
	k.Forget("a/y")
	if _, ok := k.Get("a/y"); ok {
		t.Error("a/y remembered after Forget")
	}
	k.ForgetWhere(func(key string) bool { return strings.HasPrefix(key, "a/") })
	if _, ok := k.Get("a/x"); ok {
		t.Error("a/x remembered after ForgetWhere")
	}
	if v, ok := k.Get("b/z"); !ok || v != 3 {
		t.Errorf("b/z = %d, %v; want 3, true", v, ok)
	}
	k.Prune(func(_ string, v int) bool { return v == 3 })
	if k.Len() != 0 {
		t.Errorf("Len = %d after Prune, want 0", k.Len())
	}
}

func TestKeyedUpdateKeepsOrForgets(t *testing.T) {
	var k Keyed[int]
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.Update("n", func(v int, _ bool) (int, bool) { return v + 1, true })
		}()
	}
	wg.Wait()
	if v, _ := k.Get("n"); v != 50 {
		t.Fatalf("n = %d after 50 concurrent Updates, want 50", v)
	}
	k.Update("n", func(v int, ok bool) (int, bool) { return v, false })
	if _, ok := k.Get("n"); ok {
		t.Error("n remembered after an Update that keeps nothing")
	}
	k.Update("m", func(v int, ok bool) (int, bool) {
		if ok || v != 0 {
			t.Errorf("Update of a key never set got %d, %v", v, ok)
		}
		return 0, false
	})
	if k.Len() != 0 {
		t.Errorf("Len = %d, want 0", k.Len())
	}
}
