package monitoringtest

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// sampleNames returns the sample names of Prometheus text expositions:
// ringfire_slots_owned, ringfire_slot_release_duration_seconds_bucket, ...
func sampleNames(expositions map[string]string) map[string]bool {
	names := map[string]bool{}
	for _, text := range expositions {
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			if end := strings.IndexAny(line, "{ "); end > 0 {
				names[line[:end]] = true
			}
		}
	}
	return names
}

// prometheusOwn are the series Prometheus makes itself for each target.
var prometheusOwn = map[string]bool{"up": true}

// familyOf is a histogram's or summary's name for one of its series.
func familyOf(name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := strings.CutSuffix(name, suffix); ok {
			return f
		}
	}
	return name
}

// sourceLiterals collects the quoted metric names in ringfire's Go
// sources (tests and e2e/ left out), for the metrics a replica exports only
// after their first event: a counter vector by reason has no series until
// something happened for a reason.
func sourceLiterals(root string) (string, error) {
	var all strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(root, path); rel == "e2e" || rel == ".git" || rel == "deploy" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		all.Write(data)
		return nil
	})
	return all.String(), err
}

// moduleRoot finds the directory of ringfire's go.mod above the test's.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/ringfire/ringfire\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/ringfire/ringfire above the test")
		}
		dir = parent
	}
}
