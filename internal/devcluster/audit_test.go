package devcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditLogIsOffByDefault(t *testing.T) {
	c := &Cluster{dir: t.TempDir()}
	args, err := c.writeAuditPolicy()
	if err != nil || len(args) != 0 {
		t.Fatalf("writeAuditPolicy without AuditLog = %v, %v; want no flags", args, err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, auditPolicyFile)); !os.IsNotExist(err) {
		t.Errorf("policy file written without AuditLog: %v", err)
	}
}

func TestAuditLogFlagsAndPolicy(t *testing.T) {
	c := &Cluster{dir: t.TempDir(), opts: Options{AuditLog: true}}
	args, err := c.writeAuditPolicy()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(args, " ")
	policy := filepath.Join(c.dir, auditPolicyFile)
	for _, want := range []string{"--audit-policy-file=" + policy, "--audit-log-path=" + c.AuditLogPath(), "--audit-log-maxsize=0"} {
		if !strings.Contains(joined, want) {
			t.Errorf("flags %q lack %q", joined, want)
		}
	}
	data, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	// Writes on the Job-owned kinds are recorded with their bodies, and the
	// last rule drops everything else.
	for _, want := range []string{"level: RequestResponse", `"pods/*"`, `"jobs/*"`, `"podgroups/*"`, "- level: None"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("policy lacks %s", want)
		}
	}
}
