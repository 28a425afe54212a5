package replica

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The CronJob controller is left out, with a warning, on an API server without the CronJob
// CRD; it stays when the CRD is there or the API server cannot tell.
func TestServesCronJobs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resources []string // served in batch.volcano.sh/v1alpha1; nil: the group is an error
		want      bool
		warns     bool
	}{
		{"CronJob CRD installed", []string{"jobs", "jobs/status", "cronjobs", "cronjobs/status"}, true, false},
		{"an older Volcano: Jobs only", []string{"jobs", "jobs/status"}, false, true},
		{"the API server cannot tell", nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/apis/batch.volcano.sh/v1alpha1" || tc.resources == nil {
					http.Error(w, "unavailable", http.StatusServiceUnavailable)
					return
				}
				list := metav1.APIResourceList{GroupVersion: "batch.volcano.sh/v1alpha1"}
				for _, name := range tc.resources {
					list.APIResources = append(list.APIResources, metav1.APIResource{Name: name, Namespaced: true, Kind: "X"})
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(list)
			}))
			defer srv.Close()
			var logs strings.Builder
			log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
			if got := servesCronJobs(&rest.Config{Host: srv.URL}, log); got != tc.want {
				t.Errorf("servesCronJobs = %v, want %v", got, tc.want)
			}
			if warned := strings.Contains(logs.String(), "deploy/crds/batch.volcano.sh_cronjobs.yaml"); warned != tc.warns {
				t.Errorf("warning logged %v, want %v; log: %s", warned, tc.warns, logs.String())
			}
		})
	}
}
