package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The API server's own request counter is what e2e/bench reads to count
// writes; it must be there, by verb and resource, for the admin.
func TestAPIServerMetricsCountRequests(t *testing.T) {
	c := shared.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := c.APIServerMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"apiserver_request_total{", `verb="POST"`, `resource="nodes"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
