package promreg

// Metric is one metric of the Contract: its name, type and labels as a
// scrape of a replica shows them (the target's own labels, job and
// instance, left out).
type Metric struct {
	Name   string
	Type   string // counter, gauge or histogram
	Labels []string
}

// Contract lists the metrics a replica with a cluster (`ringfire run
// --kubeconfig ...` with the default controllers) exposes on
// --metrics-bind-address, that the dashboard, the alerts and the status page
// are built on: docs/metrics.md says what each means. The names of
// Kubernetes' client-go and workqueue metrics are theirs, so that dashboards
// made for any controller read them. Tests of those consumers, and the
// end-to-end check that a running replica has them all, read this list.
var Contract = []Metric{
	// API traffic (client-go, k8s.io/component-base names).
	{"rest_client_requests_total", "counter", []string{"code", "method", "host"}},
	{"rest_client_request_duration_seconds", "histogram", []string{"verb", "host"}},
	{"rest_client_rate_limiter_duration_seconds", "histogram", []string{"verb", "host"}},

	// Each controller's Dispatcher (client-go workqueue names); name is the
	// controller: job, queue, podgroup, cronjob, jobflow, jobtemplate, batchjob.
	{"workqueue_depth", "gauge", []string{"name"}},
	{"workqueue_adds_total", "counter", []string{"name"}},
	{"workqueue_queue_duration_seconds", "histogram", []string{"name"}},
	{"workqueue_work_duration_seconds", "histogram", []string{"name"}},
	{"workqueue_retries_total", "counter", []string{"name"}},
	{"workqueue_unfinished_work_seconds", "gauge", []string{"name"}},
	{"workqueue_longest_running_processor_seconds", "gauge", []string{"name"}},
	{"ringfire_workqueue_errors_total", "counter", []string{"name"}},
	{"ringfire_workqueue_panics_total", "counter", []string{"name"}},
	{"ringfire_workqueue_give_ups_total", "counter", []string{"name"}},
	{"ringfire_workqueue_coalesced_total", "counter", []string{"name"}},
	{"ringfire_workqueue_dropped_total", "counter", []string{"name", "reason"}},
	{"ringfire_workqueue_in_flight", "gauge", []string{"name"}},
	// Transient errors (controllers/kit): counted by reason, and the keys waiting on one.
	{"ringfire_transient_errors_total", "counter", []string{"name", "reason"}},
	{"ringfire_keys_waiting", "gauge", []string{"name"}},
	// Poison keys (shard.Quarantine): the Job, batchjob and podgroup controllers.
	{"ringfire_keys_quarantined", "gauge", []string{"name"}},
	// Panics recovered on informers' goroutines (internal/guard): component is the
	// controller or cache whose handler or transform panicked, or client-go.
	{"ringfire_handler_panics_total", "counter", []string{"component"}},

	// The ring.
	{"ringfire_ring_slots", "gauge", nil},
	{"ringfire_ring_members", "gauge", nil},
	{"ringfire_slots_owned", "gauge", nil},
	{"ringfire_slots_assigned", "gauge", nil},
	{"ringfire_slots_orphaned", "gauge", nil},
	{"ringfire_slot_handovers_total", "counter", []string{"direction"}},
	{"ringfire_slot_acquire_duration_seconds", "histogram", nil},
	{"ringfire_slot_release_duration_seconds", "histogram", nil},
	{"ringfire_slot_drain_timeouts_total", "counter", nil},
	{"ringfire_fencing_events_total", "counter", nil},
	{"ringfire_member_joined", "gauge", nil},
	{"ringfire_writes_fenced_total", "counter", nil},
	{"ringfire_ready", "gauge", nil},
	// What the replica's cache keeps: resource, and form full or summary.
	{"ringfire_cache_objects", "gauge", []string{"resource", "form"}},
	// The objects of the held slots kept as stubs: no Job the cache knows controls them.
	{"ringfire_cache_foreign_objects", "gauge", []string{"resource"}},
	{"ringfire_build_info", "gauge", []string{"version", "revision", "goversion"}},
	// TLS to the ring's etcd (none without --etcd-ca/--etcd-cert): etcd-ca, etcd-client, etcd-server.
	{"ringfire_certificate_expiry_timestamp_seconds", "gauge", []string{"certificate"}},

	// The workload of the slots this replica holds: summed over the
	// replicas, the cluster's.
	{"ringfire_jobs", "gauge", []string{"phase", "queue"}},
	{"ringfire_jobs_phase_age_seconds", "gauge", []string{"phase"}},
	{"ringfire_podgroups", "gauge", []string{"phase", "queue"}},
	{"ringfire_job_running_seconds", "histogram", nil},
	{"ringfire_job_completion_seconds", "histogram", []string{"phase"}},
	{"ringfire_job_commands_taken_total", "counter", []string{"action"}},
	{"ringfire_queue_commands_taken_total", "counter", []string{"action"}},
	{"ringfire_cronjob_jobs_created_total", "counter", nil},
	{"ringfire_cronjob_missed_schedules_total", "counter", []string{"reason"}},

	// The process (Go's process collector).
	{"process_cpu_seconds_total", "counter", nil},
	{"process_resident_memory_bytes", "gauge", nil},
}

// contractNames are the names of the Contract's metrics, in its order.
func contractNames() []string {
	names := make([]string, len(Contract))
	for i, m := range Contract {
		names[i] = m.Name
	}
	return names
}
