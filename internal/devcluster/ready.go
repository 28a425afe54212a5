package devcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pollInterval is how often readiness conditions are checked.
const pollInterval = 100 * time.Millisecond

// logTailLines is how much of a component's log an error message quotes.
const logTailLines = 30

// waitFor polls cond until it holds, ctx ends, or one of the watched
// components exits. Its errors quote the relevant logs.
func (c *Cluster) waitFor(ctx context.Context, what string, watched []Component, cond func(context.Context) (bool, error)) error {
	c.log.Debug("waiting", "for", what)
	start := time.Now()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var lastErr error
	for {
		for _, name := range watched {
			c.mu.Lock()
			p := c.procs[name]
			c.mu.Unlock()
			if p == nil {
				continue
			}
			if done, err := p.exited(); done {
				return fmt.Errorf("waiting for %s: %s %v; last lines of %s:\n%s",
					what, name, err, p.logPath, p.logTail(logTailLines))
			}
		}
		probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := cond(probeCtx)
		cancel()
		if ok {
			c.log.Debug("ready", "what", what, "after", time.Since(start).Round(time.Millisecond))
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: gave up after %v (last error: %v)%s",
				what, time.Since(start).Round(time.Second), lastErr, c.tails(watched))
		case <-ticker.C:
		}
	}
}

// LogTails returns the last lines of every component's log, each headed by
// its path: what a failed test or a failed dev session wants to see.
func (c *Cluster) LogTails() string { return c.tails(c.components()) }

func (c *Cluster) tails(names []Component) string {
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "\nlast lines of %s:\n%s", c.LogPath(name), c.LogTail(name, logTailLines))
	}
	return b.String()
}

func (c *Cluster) etcdHealthy(ctx context.Context) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.etcdURL+"/health", nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var health struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal(body, &health); err != nil {
		return false, fmt.Errorf("etcd /health: %s: %w", body, err)
	}
	return health.Health == "true", nil
}

func (c *Cluster) apiServerReady(ctx context.Context) (bool, error) {
	body, err := c.clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return false, fmt.Errorf("/readyz: %w: %s", err, body)
	}
	return string(body) == "ok", nil
}

// defaultServiceAccountExists holds once the controller manager runs: the
// ServiceAccount admission plugin refuses pods in a namespace without one.
func (c *Cluster) defaultServiceAccountExists(ctx context.Context) (bool, error) {
	_, err := c.clientset.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// nodesReady holds when every fake node is Ready and the node lifecycle
// controller has lifted the taint the API server puts on new nodes.
func (c *Cluster) nodesReady(ctx context.Context) (bool, error) {
	for _, name := range c.nodeNames {
		node, err := c.clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !nodeReady(node) {
			return false, fmt.Errorf("node %s not Ready yet", name)
		}
		for _, taint := range node.Spec.Taints {
			if taint.Key == corev1.TaintNodeNotReady || taint.Key == corev1.TaintNodeUnreachable {
				return false, fmt.Errorf("node %s still tainted %s", name, taint.Key)
			}
		}
	}
	return true, nil
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
