package devcluster

import (
	_ "embed"
	"os"
	"path/filepath"
)

// auditPolicyYAML is the API server's audit policy when Options.AuditLog is
// set: writes on Job-owned objects, bodies included; nothing else. See the
// comment at its top.
//
//go:embed audit-policy.yaml
var auditPolicyYAML string

// Files of the audit log, in the state directory.
const (
	auditPolicyFile = "audit-policy.yaml"
	auditLogFile    = "audit.log"
)

// AuditLogPath is the API server's audit log: one JSON audit.k8s.io/v1 Event
// per line, for every write the policy in audit-policy.yaml records. It
// exists only when the cluster was started with Options.AuditLog; a
// restarted API server appends to it.
func (c *Cluster) AuditLogPath() string { return filepath.Join(c.dir, auditLogFile) }

// writeAuditPolicy writes the policy file and returns the API server flags
// that turn the audit log on, or nothing when Options.AuditLog is off.
func (c *Cluster) writeAuditPolicy() ([]string, error) {
	if !c.opts.AuditLog {
		return nil, nil
	}
	policy := filepath.Join(c.dir, auditPolicyFile)
	if err := os.WriteFile(policy, []byte(auditPolicyYAML), 0o644); err != nil {
		return nil, err
	}
	return auditArgs(policy, c.AuditLogPath()), nil
}

// auditArgs are the API server flags of the audit log backend. Blocking mode
// writes each event in the goroutine that served the request, as the handler
// returns, so no event waits in a buffer when a test reads the file; a max
// size of 0 turns rotation off, so one file holds every event of the run.
func auditArgs(policy, path string) []string {
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + path,
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=0",
	}
}
