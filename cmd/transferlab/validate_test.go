package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestValidateOutIsOptional: without --out, validate goes on to its real
// checks (here: the arm is not found) instead of refusing the command line,
// and its default folder is runs/validation-<UTC time>.
func TestValidateOutIsOptional(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join("..", "..", "configs", "h200-llama.yaml")
	_, _, code, err := runCLI(t, "validate", cfg, "--arm", "nope")
	if err == nil || code == 0 || !strings.Contains(err.Error(), `arm "nope" not found`) {
		t.Fatalf("exit %d: %v, want the arm check (not a missing --out)", code, err)
	}
	at := time.Date(2026, 11, 29, 23, 5, 7, 0, time.FixedZone("CET", 3600))
	if got, want := defaultValidateOut(at), filepath.Join("runs", "validation-20261129-220507"); got != want {
		t.Errorf("defaultValidateOut = %q, want %q (UTC)", got, want)
	}
}

func TestValidateRefusesBadInvocations(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	cases := []struct {
		name, config, arm, want string
	}{
		{"simulated server", "configs/quickstart.yaml", "rmsnorm-2.5x", "server.kind must be reference"},
		{"unknown arm", "configs/h200-llama.yaml", "nope", `arm "nope" not found or has no override`},
		{"baseline has no override", "configs/h200-llama.yaml", "baseline", "has no override"},
		{"a ceiling is never validated", "configs/h200-llama-study.yaml", "rmsnorm-ceiling", "is a ceiling (a timing-only ablation"},
		{"missing config", "configs/none.yaml", "x", "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := runValidate(context.Background(), io.Discard, filepath.Join(root, tc.config),
				validateOpts{arm: tc.arm, out: t.TempDir()}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestValidateConfigReadsTheGPUConfig(t *testing.T) {
	t.Parallel()
	cfg, err := loadValidateConfig(filepath.Join("..", "..", "configs", "h200-llama.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Kind != "reference" || cfg.Server.Reference == nil {
		t.Fatalf("server = %+v", cfg.Server)
	}
	found := false
	for _, a := range cfg.Arms {
		if a.Override != nil && a.Override.KernelPrefix == "tl_" {
			found = true
		}
	}
	if !found {
		t.Error("no override arm with kernel prefix tl_")
	}
}

// TestValidateConfigStrict: validate refuses a config that run refuses, by
// field and line, instead of reading a truncated value (clamp_context: 1.5
// became 1 through yaml.v3 alone).
func TestValidateConfigStrict(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "configs", "h200-llama.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	doc["trace"].(map[string]any)["clamp_context"] = 1.5
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = loadValidateConfig(path)
	if err == nil || !strings.Contains(err.Error(), "trace.clamp_context (line ") || !strings.Contains(err.Error(), "1.5 is not a whole number") {
		t.Fatalf("err = %v, want trace.clamp_context refused by field and line", err)
	}
}
