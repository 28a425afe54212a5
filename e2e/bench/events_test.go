package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// eventSeen is what the benchmark keeps of one Event: who reported it,
// through which API, and how often it has been seen.
type eventSeen struct {
	component string
	reason    string
	group     string // "events.k8s.io" for an Event made through that API, else "" (core)
	count     int32
}

// listEvents lists every Event in the cluster, a page at a time.
func listEvents(ctx context.Context, kube kubernetes.Interface) (map[types.UID]eventSeen, error) {
	out := map[types.UID]eventSeen{}
	opts := metav1.ListOptions{Limit: 500}
	for page := 0; page < 10000; page++ {
		list, err := kube.CoreV1().Events("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		for _, ev := range list.Items {
			out[ev.UID] = seen(ev)
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("list events: more than 10,000 pages")
}

func seen(ev corev1.Event) eventSeen {
	s := eventSeen{component: ev.Source.Component, reason: ev.Reason, count: max(ev.Count, 1)}
	if ev.Series != nil {
		s.count = max(s.count, ev.Series.Count)
	}
	if s.component == "" {
		s.component = ev.ReportingController
	}
	if !ev.EventTime.IsZero() {
		// Only the events.k8s.io API sets eventTime; its recorder names
		// itself in reportingController.
		s.group = "events.k8s.io"
		s.component = ev.ReportingController
	}
	return s
}

// isRingfire reports whether a replica reported the Event: every ringfire
// recorder names itself ringfire-<controller>.
func (s eventSeen) isRingfire() bool { return strings.HasPrefix(s.component, "ringfire-") }

// othersEvents returns the Event writes of everyone but ringfire between two
// lists, as the API server counts them (a new Event is a POST answered 201,
// each repeat of it a PATCH answered 200), and the same by component.
func othersEvents(before, after map[types.UID]eventSeen) (requestCounts, map[string]float64) {
	counts, byComponent := requestCounts{}, map[string]float64{}
	for uid, a := range after {
		if a.isRingfire() {
			continue
		}
		b, existed := before[uid]
		patches := a.count - b.count
		if !existed {
			counts[requestKey{verb: "POST", group: a.group, resource: "events", code: "201"}]++
			byComponent[a.component]++
			patches = a.count - 1
		}
		if patches > 0 {
			counts[requestKey{verb: "PATCH", group: a.group, resource: "events", code: "200"}] += float64(patches)
			byComponent[a.component] += float64(patches)
		}
	}
	return counts, byComponent
}

// ringfireEvents counts the Events ringfire made between two lists, by
// reporter and reason: which of its writes the events rows are.
func ringfireEvents(before, after map[types.UID]eventSeen) map[string]float64 {
	out := map[string]float64{}
	for uid, a := range after {
		if _, existed := before[uid]; !existed && a.isRingfire() {
			out[a.component+" "+a.reason]++
		}
	}
	return out
}

// describeComponents prints "kube-controller-manager 3, kwok_controller 1",
// or "none".
func describeComponents(byComponent map[string]float64) string {
	if len(byComponent) == 0 {
		return "none"
	}
	names := make([]string, 0, len(byComponent))
	for name := range byComponent {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %.0f", name, byComponent[name])
	}
	return strings.Join(parts, ", ")
}
