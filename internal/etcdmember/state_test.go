package etcdmember

import (
	"slices"
	"strings"
	"testing"
)

func TestChoose(t *testing.T) {
	self := Self{Name: "m1", PeerURLs: []string{"https://m1:2380"}}
	withData := self
	withData.HasData = true
	others := []Member{
		{ID: 1, Name: "m0", PeerURLs: []string{"https://m0:2380"}, ClientURLs: []string{"https://m0:2379"}},
		{ID: 3, Name: "m2", PeerURLs: []string{"https://m2:2380"}, ClientURLs: []string{"https://m2:2379"}},
	}
	view := func(m ...Member) []View {
		return []View{{Peer: "https://m0:2380", Members: append(slices.Clone(others), m...)}}
	}
	for _, tc := range []struct {
		name  string
		self  Self
		views []View
		want  State
		err   string
	}{
		{"data present", withData, view(), Keep, ""},
		{"no peer answers: the cluster forms", self, nil, New, ""},
		{"listed from --initial-cluster, not started", self, view(Member{ID: 2, Name: "m1", PeerURLs: self.PeerURLs}), New, ""},
		{"added again, not started", self, view(Member{ID: 9, PeerURLs: self.PeerURLs}), Existing, ""},
		{"started before, data lost, not removed", self, view(Member{ID: 2, Name: "m1", PeerURLs: self.PeerURLs, ClientURLs: []string{"https://m1:2379"}}), "", "remove and add it again"},
		{"removed, not added again", self, view(), "", "etcdctl member add m1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why, err := Choose(tc.self, tc.views)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one saying %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Errorf("error %v", err)
			case got != tc.want:
				t.Errorf("state %q (%s), want %q", got, why, tc.want)
			}
		})
	}
}

func TestFlags(t *testing.T) {
	args := []string{"--name=m1", "--data-dir", "/var/lib/etcd", "--initial-advertise-peer-urls=https://m1:2380",
		"--initial-cluster=m0=https://m0:2380,m1=https://m1:2380,m2=https://m2:2380", "--initial-cluster-state=new",
		"--client-cert-auth", "--peer-cert-file=/tls/tls.crt"}
	f, err := ParseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "m1" || f.DataDir != "/var/lib/etcd" || f.PeerCert != "/tls/tls.crt" || !slices.Equal(f.PeerURLs, []string{"https://m1:2380"}) {
		t.Errorf("parsed %+v", f)
	}
	if peers := slices.Sorted(slices.Values(f.Peers())); !slices.Equal(peers, []string{"https://m0:2380", "https://m2:2380"}) {
		t.Errorf("peers %v", peers)
	}
	got := WithState(args, Existing)
	if n := len(got); n != len(args) || got[n-1] != "--initial-cluster-state=existing" || slices.Contains(got, "--initial-cluster-state=new") {
		t.Errorf("WithState: %v", got)
	}
	if _, err := ParseFlags([]string{"--name=m1"}); err == nil {
		t.Error("no --data-dir: no error")
	}
}
