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

// The CronJob and JobFlow controllers are left out on an API server without their CRDs; they
// stay when the CRDs are there or the API server cannot tell.
func TestServes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gv        string
		want      []string // asked for
		resources []string // served in gv; nil: the group is an error
		notFound  bool     // the group is not served at all
		serves    bool
	}{
		{"CronJob CRD installed", "batch.volcano.sh/v1alpha1", []string{"cronjobs"}, []string{"jobs", "jobs/status", "cronjobs", "cronjobs/status"}, false, true},
		{"an older Volcano: Jobs only", "batch.volcano.sh/v1alpha1", []string{"cronjobs"}, []string{"jobs", "jobs/status"}, false, false},
		{"the API server cannot tell", "batch.volcano.sh/v1alpha1", []string{"cronjobs"}, nil, false, true},
		{"flow CRDs installed", "flow.volcano.sh/v1alpha1", []string{"jobflows", "jobtemplates"}, []string{"jobflows", "jobtemplates", "jobflows/status"}, false, true},
		{"JobFlows without JobTemplates", "flow.volcano.sh/v1alpha1", []string{"jobflows", "jobtemplates"}, []string{"jobflows"}, false, false},
		{"no flow group at all", "flow.volcano.sh/v1alpha1", []string{"jobflows", "jobtemplates"}, nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.notFound {
					http.NotFound(w, r)
					return
				}
				if r.URL.Path != "/apis/"+tc.gv || tc.resources == nil {
					http.Error(w, "unavailable", http.StatusServiceUnavailable)
					return
				}
				list := metav1.APIResourceList{GroupVersion: tc.gv}
				for _, name := range tc.resources {
					list.APIResources = append(list.APIResources, metav1.APIResource{Name: name, Namespaced: true, Kind: "X"})
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(list)
			}))
			defer srv.Close()
			var logs strings.Builder
			log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
			if got := serves(&rest.Config{Host: srv.URL}, log, tc.gv, tc.want...); got != tc.serves {
				t.Errorf("serves = %v, want %v", got, tc.serves)
			}
		})
	}
}
