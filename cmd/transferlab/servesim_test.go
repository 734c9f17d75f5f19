package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestServeSimConfigStrict: serve-sim --config refuses what a run config's
// server.sim block refuses, with field and line (it used to truncate
// layers: 31.9 to 31 and print that model's capacity).
func TestServeSimConfigStrict(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml string
		want       []string // "" : accepted
	}{
		{"decimal layers", "model:\n  layers: 31.9\n", []string{"model.layers (line 2): 31.9 is not a whole number"}},
		{"unknown key and range, at once", "model:\n  heads: 0\ngpu:\n  tflops: 3\n",
			[]string{"gpu.tflops (line 4): unknown key", "model.heads (line 2): must be ≥ 1, got 0"}},
		{"whole layers", "model:\n  layers: 32.0\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "t.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			out, _, code, err := runCLI(t, "serve-sim", "--config", path, "--capacity", "1020:130")
			if len(tc.want) == 0 {
				if err != nil || code != 0 || !strings.Contains(out, "saturation") {
					t.Fatalf("exit %d: %v\n%s", code, err, out)
				}
				return
			}
			if err == nil || code == 0 {
				t.Fatalf("exit %d, no error; printed:\n%s", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) || !strings.Contains(err.Error(), path) {
					t.Errorf("error lacks %q (and the file %s):\n%v", w, path, err)
				}
			}
		})
	}
}

// TestServeSimChild: serve-sim --child (bench-client's simulator child, here
// this test binary through TestMain) prints only its URL, serves the API and
// the truth export, and exits cleanly when its stdin closes; a --pin-cpu it
// cannot apply fails with the flag named.
func TestServeSimChild(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startChild(context.Background(), exe, []string{"serve-sim", "--addr", "127.0.0.1:0", "--child"})
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
	t.Run("bad --pin-cpu", func(t *testing.T) {
		t.Parallel()
		_, err := startChild(context.Background(), exe, []string{"serve-sim", "--addr", "127.0.0.1:0", "--child", "--pin-cpu", "1000"})
		if err == nil || !strings.Contains(err.Error(), "--pin-cpu 1000") {
			t.Fatalf("err = %v, want the child's error naming --pin-cpu 1000", err)
		}
	})
}
