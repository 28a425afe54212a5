// Package guard keeps a panic in code client-go calls from ending the replica.
//
// client-go runs informer event handlers and SetTransform functions on its own
// goroutines, outside any reconcile, and wraps its handler calls in
// utilruntime.HandleCrash, which logs and then re-panics: one handler that
// panics on one object ends the process, on every replica that watches that
// object, at once. The Dispatcher's recover and the quarantine (shard) never
// see it. This package is the recover for those goroutines:
//
//   - handler.go: Handler wraps a ResourceEventHandler so that a panic in
//     OnAdd, OnUpdate or OnDelete is counted, logged with the object's key and
//     the stack, and, with Quarantine, quarantines the object's key in its
//     controller's Dispatcher as a reconcile's panic would. Every
//     AddEventHandler and AddHandler call in the module passes one
//     (TestEveryHandlerIsGuarded reads the source to hold it).
//   - transform.go: Transform wraps an informer's TransformFunc; an object
//     whose transform panics is stored as a bounded Stub of its metadata, not
//     dropped: an error from a transform fails the informer's whole list.
//   - crash.go: ContainClientGo turns client-go's re-panic off for the
//     process (utilruntime.ReallyCrash) and counts what it recovers, for the
//     goroutines of client-go that no wrapper here reaches.
//   - key.go: KeyOf, an object's namespace/name that cannot panic.
//   - metrics.go: ringfire_handler_panics_total{component}.
//
// It imports no other ringfire package, so that every layer may use it.
package guard
