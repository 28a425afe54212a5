package main

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The release binary must not link the testing package: its flags would
// register themselves (test.v, test.run, ...) and its code would ship in
// every ringfire. It creeps in through any package the binary imports that
// imports testing, such as a test helper put beside product code. The
// binary is built as a release is, and its symbol table read with go tool nm.
func TestReleaseBinaryLinksNoTesting(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the ringfire binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "ringfire")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ringfire: %v\n%s", err, out)
	}
	nm, err := exec.CommandContext(ctx, "go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	var testingSyms []string
	sawMain := false
	sc := bufio.NewScanner(bytes.NewReader(nm))
	for sc.Scan() {
		// address, type letter, name (which may hold spaces); undefined
		// symbols have no address.
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && len(fields[0]) > 1 {
			fields = fields[1:]
		}
		if len(fields) < 2 {
			continue
		}
		name := strings.Join(fields[1:], " ")
		switch {
		case name == "main.main":
			sawMain = true
		case strings.HasPrefix(name, "testing."):
			testingSyms = append(testingSyms, name)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !sawMain {
		t.Fatalf("no main.main in go tool nm's output (%d bytes): the symbol table was not read", len(nm))
	}
	if len(testingSyms) > 0 {
		if len(testingSyms) > 10 {
			testingSyms = append(testingSyms[:10], "...")
		}
		t.Errorf("the ringfire binary links the testing package (`go list -deps ./cmd/ringfire` shows which import brings it): %s",
			strings.Join(testingSyms, ", "))
	}
}
