package deploytest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/ringfire/ringfire/e2e/procs"
)

// statusReader reads the replicas' /status.json as a scraper with the
// ClusterRole ringfire-metrics-reader would: over HTTPS with a bearer token
// (the replicas run with --metrics-secure). It goes through a port-forward
// per pod, kept while the pod lives, because the API server's pod proxy
// does not pass the caller's token on; like the proxy, it needs nothing but
// the Kubernetes API.
type statusReader struct {
	cfg   *rest.Config
	kube  kubernetes.Interface
	ns    string
	token string
	http  *http.Client

	mu       sync.Mutex
	forwards map[types.UID]*forward
}

// forward is one pod's port-forward to its metrics port.
type forward struct {
	port uint16        // on 127.0.0.1
	stop chan struct{} // closing it ends the forward
	done chan struct{} // closed once it has ended
}

// newStatusReader reads the replicas of ns with the token of a ServiceAccount
// of the test's, bound to ringfire-metrics-reader.
func newStatusReader(t *testing.T, tg *target) *statusReader {
	return &statusReader{cfg: tg.cfg, kube: tg.kube, ns: tg.ns,
		token:    procs.MetricsToken(t, tg.cfg, tg.ns, "ringfire-deploytest", true),
		http:     &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, // self-signed
		forwards: map[types.UID]*forward{}}
}

// get returns pod's /status.json.
func (r *statusReader) get(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
	f, err := r.forwardTo(ctx, pod)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/status.json", f.port), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := r.http.Do(req)
	if err != nil {
		r.drop(pod.UID) // the next read forwards anew
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s /status.json: HTTP %d", pod.Name, resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

// forwardTo returns the pod's forward, opening one when it has none, within
// 5 s or ctx.
func (r *statusReader) forwardTo(ctx context.Context, pod *corev1.Pod) (*forward, error) {
	r.mu.Lock()
	f, ok := r.forwards[pod.UID]
	r.mu.Unlock()
	if ok {
		select {
		case <-f.done:
			r.drop(pod.UID)
		default:
			return f, nil
		}
	}
	transport, upgrader, err := spdy.RoundTripperFor(r.cfg)
	if err != nil {
		return nil, err
	}
	url := r.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(r.ns).Name(pod.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	f = &forward{stop: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, f.stop, ready, io.Discard, io.Discard)
	if err != nil {
		return nil, err
	}
	go func() { defer close(f.done); _ = pf.ForwardPorts() }()
	select {
	case <-ready:
	case <-f.done:
		return nil, fmt.Errorf("port-forward to %s ended before it was ready", pod.Name)
	case <-time.After(5 * time.Second):
		close(f.stop)
		return nil, errors.New("port-forward to " + pod.Name + " not ready within 5 s")
	case <-ctx.Done():
		close(f.stop)
		return nil, fmt.Errorf("port-forward to %s: %w", pod.Name, ctx.Err())
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) == 0 {
		close(f.stop)
		return nil, fmt.Errorf("port-forward to %s: no local port (%v)", pod.Name, err)
	}
	f.port = ports[0].Local
	r.mu.Lock()
	defer r.mu.Unlock()
	if other, ok := r.forwards[pod.UID]; ok { // another read opened one meanwhile
		close(f.stop)
		return other, nil
	}
	r.forwards[pod.UID] = f
	return f, nil
}

// drop ends the forward of pod uid, if any.
func (r *statusReader) drop(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.forwards[uid]; ok {
		close(f.stop)
		delete(r.forwards, uid)
	}
}

// keep ends the forwards of pods not among pods (deleted, replaced).
func (r *statusReader) keep(pods []corev1.Pod) {
	live := map[types.UID]bool{}
	for _, p := range pods {
		live[p.UID] = true
	}
	r.mu.Lock()
	var gone []types.UID
	for uid := range r.forwards {
		if !live[uid] {
			gone = append(gone, uid)
		}
	}
	r.mu.Unlock()
	for _, uid := range gone {
		r.drop(uid)
	}
}

// close ends every forward.
func (r *statusReader) close() { r.keep(nil) }
