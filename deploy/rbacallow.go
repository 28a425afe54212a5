package deploy

// UnexercisedGrants are the permissions the ClusterRole grants that the code needs on a path
// no suite of `make test` takes, each with the code that needs it and why no suite does. Keep
// it short: a path a suite can take cheaply gets a case instead.
var UnexercisedGrants = map[Permission]string{
	// blockOwnerDeletion: no request of its own, checked at the create by the
	// OwnerReferencesPermissionEnforcement admission plugin, which the local control plane
	// (internal/devcluster) does not enable.
	{Group: "batch.volcano.sh", Resource: "jobs/finalizers", Verb: "update"}:     "the owner references of a Job's pods, PodGroup and plugin objects block its deletion (admission, not a request)",
	{Group: "batch.volcano.sh", Resource: "cronjobs/finalizers", Verb: "update"}: "the owner references of a CronJob's Jobs block its deletion (admission, not a request)",
	{Group: "flow.volcano.sh", Resource: "jobflows/finalizers", Verb: "update"}:  "the owner references of a JobFlow's Jobs block its deletion (admission, not a request)",
	{Group: "batch", Resource: "jobs/finalizers", Verb: "update"}:                "the owner references of a batch/v1 Job's pods block its deletion (admission, not a request)",
	{Group: "", Resource: "pods/finalizers", Verb: "update"}:                     "the owner references of a bare pod's PodGroup block the pod's deletion (admission, not a request)",
	// The slot label's admission policy asks the authorizer whether the writer may place a
	// slot (deploy/crds/slot-policy.yaml): a check at admission, no request.
	{Group: "ringfire.io", Resource: "slots", Verb: "place"}: "the admission policy ringfire-slot lets only who may place a slot write the label ringfire.io/slot (an authorizer check at admission, not a request); proven by deploy/crds's TestAdmissionPolicies",
	// A read by name when a Queue Command's target uid is not the cached Queue's: the cache
	// lags a Queue made or re-created a moment before the Command. The suites' Commands name
	// Queues their replicas have seen.
	{Group: "scheduling.volcano.sh", Resource: "queues", Verb: "get"}: "controllers/queue/commands.go reads a Queue by name when a Command names a uid its cache does not hold yet (a Queue made or re-created a moment before)",
	// The metrics port's delegated authentication and authorization (--metrics-secure,
	// internal/opsserver/access.go): the suites that turn it on run replicas as processes
	// (e2e/monitoringtest) or call the guard directly (internal/opsserver's
	// TestSecureMetricsAskTheAPIServer, as ringfire's ServiceAccount), outside e2e/stack's
	// recording.
	{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}:        "--metrics-secure asks the API server who a scraper's token is (internal/opsserver/access.go); proven by internal/opsserver and e2e/monitoringtest, whose replicas are not recorded",
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}: "--metrics-secure asks the API server whether the scraper may get the path (internal/opsserver/access.go); proven by internal/opsserver and e2e/monitoringtest, whose replicas are not recorded",
}
