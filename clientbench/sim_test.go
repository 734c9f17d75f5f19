package clientbench

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestServeSimChild: the simulator child (bench-client --serve-sim, here
// this test binary through TestMain) prints only its URL, serves the API and
// the truth export, and exits cleanly when its stdin closes; a
// --server-cpus it cannot apply fails with the flag named.
func TestServeSimChild(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startChild(context.Background(), exe, []string{Command, "--serve-sim", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.url, "http://127.0.0.1:") {
		t.Errorf("first line %q, want the base URL alone", srv.url)
	}
	truth, err := fetchTruth(context.Background(), srv.url)
	if err != nil || len(truth) != 0 {
		t.Errorf("truth export of a fresh simulator: %v, %v; want empty", truth, err)
	}
	var cerr error
	closeServer(srv, &cerr)
	if cerr != nil {
		t.Errorf("child told to stop: %v, want a clean exit", cerr)
	}
	if runtime.GOOS != "linux" {
		return
	}
	t.Run("bad --server-cpus", func(t *testing.T) {
		t.Parallel()
		_, err := startChild(context.Background(), exe, []string{Command, "--serve-sim", "127.0.0.1:0", "--server-cpus", "1000"})
		if err == nil || !strings.Contains(err.Error(), "--server-cpus 1000") {
			t.Fatalf("err = %v, want the child's error naming --server-cpus 1000", err)
		}
	})
}

// TestSweepSimConfig: the sweep's simulator config is the default one with
// the raised batch limits and every op --sim-speedup × faster; a --sim-config
// file replaces the limits, and a missing one is an error naming the flag.
func TestSweepSimConfig(t *testing.T) {
	t.Parallel()
	cfg, err := sweepSimConfig(Options{simSpeedup: 16})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Scheduler.MaxNumSeqs != 8192 || cfg.TruthCapacity != 65536 || len(cfg.Overrides) == 0 {
		t.Errorf("config %+v: want raised limits and overrides", cfg.Scheduler)
	}
	for op, f := range cfg.Overrides {
		if f != 16 {
			t.Errorf("override %s = %g, want 16", op, f)
		}
	}
	if cfg, err := sweepSimConfig(Options{simSpeedup: 1}); err != nil || len(cfg.Overrides) != 0 {
		t.Errorf("speed-up 1: overrides %v, err %v; want none", cfg.Overrides, err)
	}
	path := t.TempDir() + "/sim.yaml"
	if err := os.WriteFile(path, []byte("scheduler:\n  max_num_seqs: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err := sweepSimConfig(Options{simSpeedup: 1, simConfig: path}); err != nil || cfg.Scheduler.MaxNumSeqs != 7 {
		t.Errorf("--sim-config: max_num_seqs %d, err %v; want the file's 7", cfg.Scheduler.MaxNumSeqs, err)
	}
	if _, err := sweepSimConfig(Options{simSpeedup: 1, simConfig: path + ".missing"}); err == nil || !strings.Contains(err.Error(), "--sim-config") {
		t.Errorf("missing --sim-config: err %v, want the flag named", err)
	}
}
