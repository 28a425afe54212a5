// Package runlog records, independently of the replicas' own view of who
// owns what, every run of work on a key: which replica, from when to when.
// Tests use it to check that no key was worked on by two at once.
package runlog

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Run is one handling of Key by Replica.
type Run struct {
	Key, Replica string
	Start, End   time.Time
}

// Log collects runs from any number of goroutines.
type Log struct {
	mu   sync.Mutex
	runs []Run
}

// Add records a run.
func (l *Log) Add(r Run) {
	l.mu.Lock()
	l.runs = append(l.runs, r)
	l.mu.Unlock()
}

// Count is the number of runs recorded.
func (l *Log) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs)
}

// Of describes the runs of key, oldest first, at most the last n: which
// replica ran it, from when to when.
func (l *Log) Of(key string, n int) []string {
	l.mu.Lock()
	var runs []Run
	for _, r := range l.runs {
		if r.Key == key {
			runs = append(runs, r)
		}
	}
	l.mu.Unlock()
	sort.Slice(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
	runs = runs[max(0, len(runs)-n):]
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = fmt.Sprintf("%s [%s..%s]", r.Replica, stamp(r.Start), stamp(r.End))
	}
	return out
}

// Overlaps describes every pair of runs of one key that overlapped in time,
// by two replicas or by one.
func (l *Log) Overlaps() []string {
	l.mu.Lock()
	byKey := map[string][]Run{}
	for _, r := range l.runs {
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	l.mu.Unlock()
	var bad []string
	for key, runs := range byKey {
		sort.Slice(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
		latest := runs[0] // of the runs started so far, the one that ends last
		for _, r := range runs[1:] {
			if r.Start.Before(latest.End) {
				bad = append(bad, fmt.Sprintf("%s: %s [%s..%s] and %s [%s..%s]", key,
					latest.Replica, stamp(latest.Start), stamp(latest.End), r.Replica, stamp(r.Start), stamp(r.End)))
			}
			if r.End.After(latest.End) {
				latest = r
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }
