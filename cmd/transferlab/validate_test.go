package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/integrate"
)

// TestValidateOutIsOptional: without --out, validate goes on to its real
// checks (here: the arm is not found) instead of refusing the command line,
// (its default folder, runs/validation-<UTC time>: experiment.DefaultOutDir).
func TestValidateOutIsOptional(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join("..", "..", "configs", "h200-llama.yaml")
	_, _, code, err := runCLI(t, "validate", cfg, "--arm", "nope")
	if err == nil || code == 0 || !strings.Contains(err.Error(), `arm "nope" not found`) {
		t.Fatalf("exit %d: %v, want the arm check (not a missing --out)", code, err)
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
			err := runValidate(context.Background(), filepath.Join(root, tc.config),
				integrate.Validate{Arm: tc.arm, Out: t.TempDir(), Log: io.Discard})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
