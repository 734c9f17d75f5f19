package main

import (
	"bufio"
	"fmt"
	"math"
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

// TestServeSimCapacityEnoughRequests: --capacity runs as many requests as
// the config's batch needs; with 8,192 sequences a step it used to run
// 2,000, all admitted at once, and print their drain (66,929 req/s for
// 32:128, against 300,644 tok/s: not 128 tokens per request).
func TestServeSimCapacityEnoughRequests(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte("scheduler:\n  max_num_seqs: 8192\n  max_batch_tokens: 16384\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code, err := runCLI(t, "serve-sim", "--config", path, "--capacity", "32:128")
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	var tokS, reqS float64
	i := strings.Index(out, "): ")
	if !strings.Contains(out, "49152 requests queued at once") || i < 0 {
		t.Fatalf("output %q, want the 49152 requests it ran", out)
	}
	if _, err := fmt.Sscanf(out[i+3:], "%f output tok/s, %f req/s", &tokS, &reqS); err != nil {
		t.Fatalf("parsing %q: %v", out, err)
	}
	if math.Abs(tokS-128*reqS) > 0.02*tokS {
		t.Errorf("%.0f tok/s against %.2f req/s × 128: not a steady state\n%s", tokS, reqS, out)
	}
}
