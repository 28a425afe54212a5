package scheduler

import (
	"os"
	"testing"
)

// TestMain turns off client-go's streaming lists: Volcano's generated fake
// clientset does not send the bookmark that ends the initial events, so an
// informer over it would never sync.
func TestMain(m *testing.M) {
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}
