package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// TestServeSimChild: serve-sim --child (what scripts such as
// results/shard-scale-2026-12-02/run.sh start) prints only its URL on the
// first line, serves the API, and exits cleanly when its stdin closes.
func TestServeSimChild(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, "serve-sim", "--addr", "127.0.0.1:0", "--child")
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		t.Fatalf("first line %q (%v), want the base URL alone", line, err)
	}
	resp, err := http.Get(strings.TrimSpace(line) + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health: %s", resp.Status)
	}
	_ = stdin.Close()
	if err := c.Wait(); err != nil {
		t.Errorf("child told to stop: %v, want a clean exit", err)
	}
}
