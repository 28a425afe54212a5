// Package etcdmember decides how a member of the ring's etcd (deploy/etcd) starts: as one of a
// new cluster, or joining an existing one after it lost its data and was removed and added
// again (`etcdctl member remove`, `etcdctl member add`). etcd takes --initial-cluster-state only
// when its data directory is empty, and a StatefulSet gives every member the same flags, so
// the choice is made at start from what the other members say.
package etcdmember

import (
	"fmt"
	"slices"
)

// State is the --initial-cluster-state a member starts with.
type State string

const (
	New      State = "new"      // a member of a cluster that forms now
	Existing State = "existing" // a member that joins a running cluster
	// Keep: the data directory holds the member's data, so etcd ignores the flag.
	Keep State = ""
)

// Member is a member as a peer's /members lists it.
type Member struct {
	ID         uint64   `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
}

// View is one peer's answer: its list of members.
type View struct {
	Peer    string // the peer URL that answered
	Members []Member
}

// Self is the member starting.
type Self struct {
	Name     string
	PeerURLs []string // its --initial-advertise-peer-urls
	HasData  bool     // its data directory holds a write-ahead log
}

// Choose decides the state from the views of the peers that answered (none: no peer is up).
//
//   - Data present: etcd ignores the flag (Keep).
//   - A peer lists this member with no name: `etcdctl member add` added it and it never
//     started; it joins (Existing). This is the only way to Existing.
//   - A peer lists it with a name and no client URLs: the cluster is forming from
//     --initial-cluster and this member has not started yet (New).
//   - A peer lists it with client URLs: it ran before and its data is gone, but it was not
//     removed and added again. Starting it either way would bring back a member that forgot
//     its votes and log; refuse, and say what to do.
//   - A peer answers and does not list it: it was removed and not added again; refuse.
//   - No peer answers: a cluster forming, its members starting together (New).
func Choose(self Self, views []View) (State, string, error) {
	if self.HasData {
		return Keep, "the data directory holds a write-ahead log", nil
	}
	for _, v := range views {
		m, ok := find(v.Members, self.PeerURLs)
		switch {
		case !ok:
			return "", "", fmt.Errorf("member %s has no data and %s does not list it (peer URLs %v): it was removed; add it again with `etcdctl member add %s --peer-urls=%s`, then restart this pod (docs/operations.md#a-lost-etcd-member)",
				self.Name, v.Peer, self.PeerURLs, self.Name, self.PeerURLs[0])
		case m.Name == "":
			return Existing, fmt.Sprintf("%s lists it as added and not started (id %x)", v.Peer, m.ID), nil
		case len(m.ClientURLs) > 0:
			return "", "", fmt.Errorf("member %s has no data but %s lists it as started before (id %x): its data was lost; remove and add it again (`etcdctl member remove %x`, `etcdctl member add %s --peer-urls=%s`), then restart this pod (docs/operations.md#a-lost-etcd-member)",
				self.Name, v.Peer, m.ID, m.ID, self.Name, self.PeerURLs[0])
		}
	}
	if len(views) == 0 {
		return New, "no peer answers: the cluster forms now", nil
	}
	return New, fmt.Sprintf("%s lists it from --initial-cluster, not started yet: the cluster forms now", views[0].Peer), nil
}

// find is the member with one of peerURLs.
func find(members []Member, peerURLs []string) (Member, bool) {
	for _, m := range members {
		for _, u := range m.PeerURLs {
			if slices.Contains(peerURLs, u) {
				return m, true
			}
		}
	}
	return Member{}, false
}
