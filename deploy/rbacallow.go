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
}
