package devcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// fakeTools writes stand-ins for the binaries; etcd runs etcdScript.
// These tests need no built tools, so they run everywhere.
func fakeTools(t *testing.T, etcdScript string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range allComponents {
		script := "#!/bin/sh\nexit 0\n"
		if name == Etcd {
			script = "#!/bin/sh\n" + etcdScript + "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, string(name)), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestStartReportsComponentThatExits(t *testing.T) {
	tools := fakeTools(t, "echo 'etcd: data dir is corrupt' >&2; exit 3")
	dir := t.TempDir()
	start := time.Now()
	_, err := Start(context.Background(), Options{ToolsBin: tools, Dir: dir, Logger: hclog.NewNullLogger()})
	if err == nil {
		t.Fatal("Start succeeded with an etcd that exits")
	}
	for _, want := range []string{"etcd exit status 3", "data dir is corrupt", dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Start took %v to notice etcd exited", took)
	}
}

func TestStartGivesUpAfterTimeout(t *testing.T) {
	tools := fakeTools(t, "echo 'etcd: waiting for peers'; exec sleep 600")
	_, err := Start(context.Background(), Options{
		ToolsBin:     tools,
		Dir:          t.TempDir(),
		Logger:       hclog.NewNullLogger(),
		StartTimeout: time.Second,
	})
	if err == nil {
		t.Fatal("Start succeeded with an etcd that never gets healthy")
	}
	for _, want := range []string{"waiting for etcd healthy", "gave up", "last lines of"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestStartWithoutTools(t *testing.T) {
	t.Setenv(ToolsBinEnv, "")
	_, err := Start(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Errorf("Start without tools: got %v, want an error pointing at `make tools`", err)
	}
}

func TestStageFileGetsDefaultDuration(t *testing.T) {
	stages := string(renderStages(2500*time.Millisecond, 0))
	if strings.Contains(stages, "__DEFAULT_DURATION_MS__") {
		t.Error("placeholder left in the stage file")
	}
	if got := strings.Count(stages, "durationMilliseconds: 2500"); got != 2 {
		t.Errorf("default duration appears %d times, want 2 (succeeded and failed stages)", got)
	}
}

// KWOK's configuration is added only when the parallelism is raised, with
// every option KWOK would otherwise default (it defaults none of a
// configuration it is given, and refuses a parallelism of 0).
func TestStageFileSetsKWOKParallelism(t *testing.T) {
	if stages := string(renderStages(time.Second, 0)); strings.Contains(stages, "KwokConfiguration") {
		t.Error("KWOK configuration written though the parallelism is KWOK's own")
	}
	stages := string(renderStages(time.Second, 16))
	for _, want := range []string{"kind: KwokConfiguration", "podPlayStageParallelism: 16", "nodePlayStageParallelism: 4",
		"nodeLeaseParallelism: 4", "podsOnNodeSyncParallelism: 1"} {
		if !strings.Contains(stages, want) {
			t.Errorf("stage file lacks %q", want)
		}
	}
}

func TestStopDirStopsLeftoversOnly(t *testing.T) {
	dir := t.TempDir()
	// No exec: the shell keeps the command line that names dir, as the real
	// components do.
	tools := fakeTools(t, "sleep 600")
	leftover, err := startProcess("etcd", filepath.Join(dir, "etcd.log"), nil, filepath.Join(tools, "etcd"), "--data-dir="+dir+"/etcd-data")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(leftover.kill)
	// The kernel lets the parent go on before the new program's arguments
	// are in place, so /proc/<pid>/cmdline can read empty for a moment
	// after Start returns. A real leftover has been running for a while.
	for i := 0; !belongsTo(leftover.cmd.Process.Pid, dir); i++ {
		if i == 100 {
			t.Fatal("the leftover's command line never named its directory")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := writePID(dir, Etcd, leftover.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	// A recorded id that now belongs to some other process (here: this test).
	if err := writePID(dir, KWOK, os.Getpid()); err != nil {
		t.Fatal(err)
	}

	if err := StopDir(dir); err != nil {
		t.Fatal(err)
	}
	select {
	case <-leftover.done:
	case <-time.After(5 * time.Second):
		t.Fatal("leftover etcd still running after StopDir")
	}
	for _, name := range []Component{Etcd, KWOK} {
		if _, err := os.Stat(pidPath(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s pid file not removed: %v", name, err)
		}
	}
}
