package devcluster

import (
	"context"
	"fmt"
)

// APIServerMetrics returns the API server's /metrics (Prometheus text
// format), read as the cluster admin, for tests and benchmarks that count
// the requests the server itself saw (apiserver_request_total) rather than
// what one client believes it sent.
func (c *Cluster) APIServerMetrics(ctx context.Context) (string, error) {
	body, err := c.clientset.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("GET %s/metrics: %w", c.serverURL, err)
	}
	return string(body), nil
}
