// Package plan decides one reconcile of a Volcano Job, without I/O: from the Job, its pods
// and PodGroup as the cache shows them, the action the request leads to, the writes still on
// their way to the cache, and the time, Make returns a Plan: the plugin objects, the PodGroup
// and the claims wanted, the pods to create and to delete, the next status, the stories to
// tell in Events, and when to look again. The controller only carries a Plan out, in one order
// (Plan says which), and writes the status last.
//
// A write can learn what no cache showed: a pod or plugin object name held by an object of
// another UID that the cache does not hold. The controller then makes the plan again with that
// fact in the Input (Taken, PluginNamesHeld) and carries out what is left of it.
//
// The decisions of Volcano's state machine (the transition table, the completion rules, the
// lifecycle policies) are the state package's; plan puts them together with the pods and
// objects of one Job.
package plan
