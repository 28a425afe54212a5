package kit

import "sync"

// DefaultPodParallelism bounds the pod writes of one object's reconcile in flight at once.
const DefaultPodParallelism = 16

// Parallel runs fn(0) … fn(n-1), at most limit at once (one when limit is below one), and
// returns their errors by index.
func Parallel(n, limit int, fn func(i int) error) []error {
	if n == 0 {
		return nil
	}
	errs := make([]error, n)
	sem := make(chan struct{}, min(max(limit, 1), n))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errs
}

// SlowStart runs fn(0) … fn(n-1) in batches of 1, 2, 4, …, each batch Parallel at most limit
// at once, and stops after the first batch in which one failed: a write refused for a reason
// of the object's (a full quota, a webhook that says no) is refused the same way for the
// rest, which then cost the API server nothing. It returns the errors by index (nil for the
// calls never made) and how many calls were made.
func SlowStart(n, limit int, fn func(i int) error) (errs []error, tried int) {
	errs = make([]error, n)
	for batch := 1; tried < n; batch *= 2 {
		size := min(batch, n-tried)
		start := tried
		failed := false
		for j, err := range Parallel(size, limit, func(i int) error { return fn(start + i) }) {
			errs[start+j] = err
			failed = failed || err != nil
		}
		tried += size
		if failed {
			break
		}
	}
	return errs, tried
}
