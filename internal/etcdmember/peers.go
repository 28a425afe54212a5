package etcdmember

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// askTimeout bounds one peer's answer.
const askTimeout = 2 * time.Second

// Decide chooses the state for the etcd command line args: it asks the other members of
// --initial-cluster for their member lists (GET /members on their peer port, with the peer
// certificate, as etcd itself does to join), for up to wait until one answers, and applies
// Choose. It returns the state and why.
func Decide(ctx context.Context, args []string, wait time.Duration) (State, string, error) {
	f, err := ParseFlags(args)
	if err != nil {
		return "", "", err
	}
	self := Self{Name: f.Name, PeerURLs: f.PeerURLs, HasData: f.HasData()}
	if self.HasData {
		return Choose(self, nil)
	}
	client, err := peerClient(f)
	if err != nil {
		return "", "", err
	}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(wait)
	for {
		views := ask(ctx, client, f.Peers())
		if len(views) > 0 || !time.Now().Before(deadline) {
			return Choose(self, views)
		}
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// ask collects the member lists of the peers that answer.
func ask(ctx context.Context, client *http.Client, peers []string) []View {
	var views []View
	for _, peer := range peers {
		members, err := membersOf(ctx, client, peer)
		if err == nil {
			views = append(views, View{Peer: peer, Members: members})
		}
	}
	return views
}

// membersOf is a peer's member list.
func membersOf(ctx context.Context, client *http.Client, peer string) ([]Member, error) {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(peer, "/")+"/members", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/members: %s", peer, resp.Status)
	}
	var members []Member
	if err := json.NewDecoder(resp.Body).Decode(&members); err != nil {
		return nil, fmt.Errorf("%s/members: %w", peer, err)
	}
	return members, nil
}

// peerClient talks to the peers as a member does: with the peer certificate, trusting the
// peer CA (plain HTTP when the peers use it).
func peerClient(f Flags) (*http.Client, error) {
	tr := &http.Transport{}
	if f.PeerCert != "" || f.PeerCA != "" {
		tlsInfo := transport.TLSInfo{CertFile: f.PeerCert, KeyFile: f.PeerKey, TrustedCAFile: f.PeerCA}
		cfg, err := tlsInfo.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("peer TLS: %w", err)
		}
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Transport: tr, Timeout: askTimeout}, nil
}
