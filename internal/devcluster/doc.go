// Package devcluster runs a real, local Kubernetes control plane: the one
// `ringfire dev up` starts, and (through e2e/cluster, which adds the testing
// helpers) the one ringfire's end-to-end tests run against. It does not
// import testing, so the ringfire binary can link it.
//
// Start launches, on 127.0.0.1 with free ports: etcd; kube-apiserver with a
// generated CA, serving certificate, service-account keys, client-certificate
// and static-token authentication and Node,RBAC authorization;
// kube-controller-manager with its default controllers (garbage collector,
// namespace, service-account tokens, node lifecycle, ...); and kwok, which
// plays the kubelet of N fake nodes. The binaries are the pinned tools
// (e2e/tools, `make tools`), found through Options.ToolsBin or
// $RINGFIRE_TOOLS_BIN; FindTools finds or builds them without a checkout.
//
// Pods bound to a fake node follow the stages in stages.yaml: Running at
// once; then a pod with the tests' annotations runs for the duration in
// ringfire.io/e2e-duration (default Options.DefaultPodDuration, 1s) and
// ends Succeeded, or Failed with the exit code in ringfire.io/e2e-exit-code;
// a pod without them plays its first container's command (play.jq: sleep N
// runs N, exit K fails with K, an unknown command fails with 127, daemons
// run until deleted). The phase is reached whatever
// the pod's restartPolicy; there are no container restarts. Deleted pods
// disappear once their finalizers are gone, as with a kubelet.
//
// With Options.AuditLog the API server also keeps an audit log
// (Cluster.AuditLogPath) of every write on Jobs and the objects they own,
// for tests that check from outside which replica wrote what, and when.
//
// Each component logs to <Dir>/<component>.log. Stop terminates every
// process; processes also die with the process that started them if it is
// killed first.
package devcluster
