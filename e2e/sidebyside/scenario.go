package sidebyside

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// A Scenario is one file of scenarios/: objects created in a namespace of their own (Jobs,
// CronJobs, ...), and steps that act on them once they reach a given state. Each side runs it
// the same way; what happens to its Jobs is recorded and compared.
type Scenario struct {
	// Name is the file's name without .yaml; the namespace is "sbs-" + Name.
	Name        string `json:"-"`
	Description string `json:"description"`
	// Timeout bounds the scenario: past it, what was recorded is what the side did (a Job still
	// Pending then stays Pending in the table). Default 90s.
	Timeout Duration `json:"timeout"`
	// Settle is how long nothing of the namespace may change, once every step has run and every
	// Job is in a final phase (or gone), before the scenario ends. Default 3s.
	Settle Duration `json:"settle"`
	// Objects are created in order, in the scenario's namespace unless cluster-scoped.
	Objects []unstructured.Unstructured `json:"objects"`
	// Steps run in order, each once its When holds.
	Steps []Step `json:"steps"`
}

// A Step waits for a condition, then acts (or only waits, with no action).
type Step struct {
	When    When           `json:"when"`
	Command *CommandAction `json:"command,omitempty"`
	Patch   *PatchAction   `json:"patch,omitempty"`
	Delete  *DeleteAction  `json:"delete,omitempty"`
}

// When is a step's condition, checked on what the recorder has seen since the step before ran.
type When struct {
	// Job names a Job of the scenario, CronJob a CronJob (any Job it made counts).
	Job     string `json:"job,omitempty"`
	CronJob string `json:"cronJob,omitempty"`
	// Phase holds once the Job has been in this phase since the step before ran.
	Phase string `json:"phase,omitempty"`
	// Deleted holds once the Job is gone.
	Deleted bool `json:"deleted,omitempty"`
}

// CommandAction creates a bus.volcano.sh Command on a Job, as vcctl does: named after the Job
// and the action, owned by the Job, its target the Job (with its UID).
type CommandAction struct {
	Action string `json:"action"`
	Job    string `json:"job"`
}

// PatchAction applies a JSON merge patch to an object of the scenario.
type PatchAction struct {
	ObjectRef `json:",inline"`
	Merge     map[string]any `json:"merge"`
}

// DeleteAction deletes an object of the scenario, or with Selector every object of the kind
// whose labels match it (Name is then left out): all of a Job's pods at once, as a node drain
// would.
type DeleteAction struct {
	ObjectRef `json:",inline"`
	Selector  string `json:"selector,omitempty"`
}

// ObjectRef names an object of the scenario's namespace (or a cluster-scoped one) by kind.
type ObjectRef struct {
	APIVersion string `json:"apiVersion,omitempty"` // default: the first group serving Kind
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// Duration is a time.Duration written as Go writes it ("90s") in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %s: %w", b, err)
	}
	d.Duration = v
	return nil
}

// Namespace is where the scenario's objects live on each side.
func (s *Scenario) Namespace() string { return "sbs-" + s.Name }

// LoadScenarios reads every *.yaml of dir whose name matches filter (a regexp; empty for all),
// in name order.
func LoadScenarios(dir, filter string) ([]*Scenario, error) {
	match, err := regexp.Compile(filter)
	if err != nil {
		return nil, fmt.Errorf("scenario filter %q: %w", filter, err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*Scenario
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if !match.MatchString(name) {
			continue
		}
		s, err := parseScenario(f)
		if err != nil {
			return nil, err
		}
		s.Name = name
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenario in %s matches %q", dir, filter)
	}
	return out, nil
}

func parseScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Scenario
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Timeout.Duration == 0 {
		s.Timeout.Duration = 90 * time.Second
	}
	if s.Settle.Duration == 0 {
		s.Settle.Duration = 3 * time.Second
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// check refuses a scenario the runner could not play.
func (s *Scenario) check() error {
	if len(s.Objects) == 0 {
		return errors.New("no objects")
	}
	for i, o := range s.Objects {
		if o.GetKind() == "" || o.GetAPIVersion() == "" || o.GetName() == "" {
			return fmt.Errorf("object %d: apiVersion, kind and metadata.name are required", i)
		}
		if o.GetNamespace() != "" {
			return fmt.Errorf("object %s: leave the namespace out; the scenario has its own", o.GetName())
		}
	}
	for i, st := range s.Steps {
		actions := 0
		for _, set := range []bool{st.Command != nil, st.Patch != nil, st.Delete != nil} {
			if set {
				actions++
			}
		}
		if actions > 1 {
			return fmt.Errorf("step %d: at most one of command, patch and delete", i)
		}
		if d := st.Delete; d != nil && (d.Name == "") == (d.Selector == "") {
			return fmt.Errorf("step %d: delete names exactly one of name and selector", i)
		}
		w := st.When
		if (w.Job == "") == (w.CronJob == "") {
			return fmt.Errorf("step %d: when names exactly one of job and cronJob", i)
		}
		if (w.Phase == "") == !w.Deleted {
			return fmt.Errorf("step %d: when has exactly one of phase and deleted", i)
		}
	}
	return nil
}
