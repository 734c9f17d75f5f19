package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
