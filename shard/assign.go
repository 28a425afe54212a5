// How slots are assigned, and why this way (full numbers: docs/ring.md).
//
// Assign is a global greedy over (slot, member) pairs: pairs are taken best
// first, and a pair is kept when its slot is still free and its member holds
// fewer than the cap ⌊1.1·S/N⌋ slots (at least ⌈S/N⌉+1). This is consistent
// hashing with bounded loads (ε = 0.1) in rendezvous form. Without the cap,
// every slot would go to its first choice (plain HRW): a join or leave would
// move only the slots of that member, but some members would hold 1.4–1.6
// times the mean. The cap sends the excess of those members to each slot's
// next choice. The greedy's outcome is the unique stable matching of slots
// and members, so it does not depend on any processing order.
//
// Each member ranks the slots by a permutation of its own: its k-th choice is
// (c·shuffled[k] + d) mod S, with c, d from xxhash64 of its id and one fixed
// shuffle. With an independent hash per pair instead, the uncapped loads vary
// twice as much (standard deviation 5.8 slots against 4.1 at S=1024, N=30), so
// more members sit at the cap, and those are what moves extra slots: when N
// changes the cap shifts by about 1.1·S/N², but what such a member loses to a
// newcomer (or gains from a leaver) is random, and each difference moves a
// slot. Taking pairs rank by rank, the greedy stops as soon as every slot is
// taken, after about (S/N)·ln S ranks: 1.5 ms for N=128, S=16384.
//
// Measured at S=1024, N=2..32 (4 name families, 13 member sets, every join
// and 3 random leaves per N): worst moved/ideal, where ideal = S/max(N before,
// N after), and all with max/mean ≤ 1.10 unless noted:
//
//	ring, 100 points per member, bounded loads, slots in index order  1.79
//	ring, 500 points per member, bounded loads, slots in hash order   1.78
//	HRW with the cap, slots one by one in hash order                   1.59
//	global greedy, independent pair hashes                             1.70
//	the same with ε = 0.05 / ε = 0 (max/mean 1.05 / 1.03)        1.99 / 2.59
//	Maglev-style round robin (max/mean 1.03)                           2.67
//	sequential two-choice with the cap                             2.5–6.3
//	global greedy, per-member permutations (Assign)                    1.47
//	min-cost assignment under the same cap (optimal transport)     1.42–1.69
//	join order (member create revisions), equal shares     joins 1.00, leaves 10.1
//
// The target of 1.25 holds while members have many slots each, and for
// larger N it needs more: S=1024 up to N≈17, S=4096 up to N≈45, S=16384 up to
// N≈170. Beyond, the worst case grows (1.56 at S=1024, N=29). No deterministic
// function of the member set found here did better at equal balance.
//
// The table depends only on the member set and S: not on the order of the
// members, the machine, or the Go version (the shuffle and hashes are
// defined here, not taken from math/rand).

package shard

import (
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// maxLoadPercent is 100·(1+ε): no member holds more than this percentage of
// the mean S/N, rounded down (see maxLoad).
const maxLoadPercent = 110

// Assign returns the owner of every slot 0..slots-1 among members: the table
// every replica computes for the same member set. It depends only on the set
// of members (order, duplicates and empty ids are ignored) and on slots. No
// member owns more than ⌊1.1·S/N⌋ slots, or ⌈S/N⌉+1 where that is more (when
// S/N < 10). With no members every owner is ""; with slots ≤ 0 the table is
// empty.
func Assign(members []string, slots int) []string {
	table := make([]string, max(slots, 0))
	ids := canonical(members)
	if len(ids) == 0 || slots <= 0 {
		return table
	}
	r := newRanking(ids, slots)
	limit := maxLoad(slots, len(ids))
	load := make([]int, len(ids))
	owner := make([]int32, slots) // member index + 1; 0 while the slot is free
	takenAt := make([]int, slots) // the rank at which the owner took the slot

	// Pairs are taken best first: rank 0 of every member (its first choice),
	// then rank 1, and so on. A member with room takes its slot at this rank
	// if the slot is free, or if another member took it at this same rank
	// but the pair's tie-break favours this one. Once every slot is taken the
	// rest of the pairs cannot change anything.
	for rank, free := 0, slots; free > 0 && rank < slots; rank++ {
		for j := range ids {
			if load[j] == limit {
				continue
			}
			s := r.choice(j, rank)
			if i := int(owner[s]) - 1; i >= 0 {
				if takenAt[s] != rank || r.tie(s, i) >= r.tie(s, j) {
					continue
				}
				load[i]--
			} else {
				free--
			}
			owner[s], takenAt[s] = int32(j+1), rank
			load[j]++
		}
	}
	for s, o := range owner {
		table[s] = ids[o-1]
	}
	return table
}

// moved returns how many slots have a different owner in after than in
// before. Slots present in only one of the tables count as moved.
func moved(before, after []string) int {
	n := max(len(before), len(after)) - min(len(before), len(after))
	for i := range min(len(before), len(after)) {
		if before[i] != after[i] {
			n++
		}
	}
	return n
}

// Counts returns how many slots each owner holds in table; unowned slots ("")
// are not counted.
func Counts(table []string) map[string]int {
	counts := make(map[string]int)
	for _, owner := range table {
		if owner != "" {
			counts[owner]++
		}
	}
	return counts
}

// maxLoad is the most slots one of n members may hold: ⌊1.1·S/n⌋, but at
// least one more than ⌈S/n⌉. Without that one slot of room, a ring with few
// slots per member (S/n ≤ 10) has every member exactly full, and a join then
// shifts slots along long chains: 11 times the ideal at S=1024, N=128.
func maxLoad(slots, n int) int {
	return max(slots*maxLoadPercent/(100*n), (slots+n-1)/n+1)
}

// canonical returns the distinct non-empty ids, sorted.
func canonical(members []string) []string {
	ids := slices.DeleteFunc(slices.Clone(members), func(id string) bool { return id == "" })
	slices.Sort(ids)
	return slices.Compact(ids)
}

// ranking is every member's order of preference over the slots. Member j's
// choice at rank k is slot (c_j·shuffled[k] + d_j) mod S: one fixed shuffle of
// the slots, then an affine bijection of its own (c_j coprime with S), drawn
// from xxhash64 of its id. Pairs of equal rank for one slot are ordered by
// a hash of the pair (tie), then by member index.
type ranking struct {
	slots    uint64
	shuffled []uint64
	c, d     []uint64
	hash     []uint64 // xxhash64 of each member id
}

func newRanking(ids []string, slots int) *ranking {
	n := uint64(slots)
	r := &ranking{
		slots:    n,
		shuffled: shuffle(slots),
		c:        make([]uint64, len(ids)),
		d:        make([]uint64, len(ids)),
		hash:     make([]uint64, len(ids)),
	}
	for j, id := range ids {
		h := xxhash.Sum64String(id)
		c := 1 + mix64(h^0x6a09e667f3bcc908)%max(n-1, 1)
		for gcd(c, n) != 1 {
			c++ // stops at n-1 at the latest
		}
		r.c[j], r.d[j], r.hash[j] = c%n, mix64(h^0xbb67ae8584caa73b)%n, h
	}
	return r
}

// choice is member j's slot at rank k.
func (r *ranking) choice(j, k int) int {
	return int((r.c[j]*r.shuffled[k] + r.d[j]) % r.slots)
}

// tie orders the pairs of one slot at one rank: the higher tie goes first.
func (r *ranking) tie(s, j int) uint64 {
	return mix64(r.hash[j] ^ uint64(s)*0x9e3779b97f4a7c15)
}

// shuffle returns a fixed pseudo-random permutation of 0..n-1 (Fisher–Yates
// over a splitmix64 stream with a constant seed).
func shuffle(n int) []uint64 {
	p := make([]uint64, n)
	for i := range p {
		p[i] = uint64(i)
	}
	x := uint64(0x243f6a8885a308d3)
	for i := n - 1; i > 0; i-- {
		x += 0x9e3779b97f4a7c15
		k, _ := bits.Mul64(mix64(x), uint64(i+1))
		p[i], p[k] = p[k], p[i]
	}
	return p
}

// mix64 is the splitmix64 finalizer: a bijection that scrambles all bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
