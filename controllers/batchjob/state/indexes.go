package state

import (
	"sort"
	"strconv"
	"strings"
)

// span is a closed range of completion indexes [lo, hi].
type span struct{ lo, hi int }

// indexSet is a sorted list of disjoint, non-adjacent spans.
type indexSet []span

// parseIndexSet reads the "1,3-5" form used by completedIndexes. Malformed
// pieces are skipped and indexes at or above limit are dropped, so a Job
// whose completions shrank keeps only the indexes that still exist.
func parseIndexSet(s string, limit int) indexSet {
	if s == "" {
		return nil
	}
	var spans indexSet
	for _, part := range strings.Split(s, ",") {
		bounds := strings.Split(part, "-")
		lo, err := strconv.Atoi(bounds[0])
		if err != nil || lo < 0 || len(bounds) > 2 {
			continue
		}
		hi := lo
		if len(bounds) == 2 {
			if hi, err = strconv.Atoi(bounds[1]); err != nil || hi < lo {
				continue
			}
		}
		if lo >= limit {
			continue
		}
		hi = min(hi, limit-1)
		spans = append(spans, span{lo, hi})
	}
	return indexSet(nil).union(spans)
}

// union returns the set holding the indexes of both s and other.
func (s indexSet) union(other indexSet) indexSet {
	all := make(indexSet, 0, len(s)+len(other))
	all = append(all, s...)
	all = append(all, other...)
	sort.Slice(all, func(i, j int) bool { return all[i].lo < all[j].lo })
	var out indexSet
	for _, sp := range all {
		if n := len(out); n > 0 && sp.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, sp.hi)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// with returns the set plus the given indexes.
func (s indexSet) with(ixs ...int) indexSet {
	extra := make(indexSet, len(ixs))
	for i, ix := range ixs {
		extra[i] = span{ix, ix}
	}
	return s.union(extra)
}

func (s indexSet) has(ix int) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i].hi >= ix })
	return i < len(s) && s[i].lo <= ix
}

func (s indexSet) count() int {
	n := 0
	for _, sp := range s {
		n += sp.hi - sp.lo + 1
	}
	return n
}

// String renders the set the way the Job API expects: ranges of three or
// more as "a-b", pairs as "a,b".
func (s indexSet) String() string {
	var b strings.Builder
	for _, sp := range s {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sp.lo))
		switch {
		case sp.hi == sp.lo+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(sp.hi))
		case sp.hi > sp.lo+1:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(sp.hi))
		}
	}
	return b.String()
}

// lowestMissing returns up to n indexes below limit that are not in s,
// lowest first.
func (s indexSet) lowestMissing(n, limit int) []int {
	var out []int
	next := 0
	bounded := append(append(indexSet(nil), s...), span{limit, limit})
	for _, sp := range bounded {
		for ; next < sp.lo && next < limit && len(out) < n; next++ {
			out = append(out, next)
		}
		if len(out) >= n || next >= limit {
			break
		}
		next = max(next, sp.hi+1)
	}
	return out
}
