package experiment

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunRequestOutDir: the output folder is --out, else the resumed folder,
// else the config's out, else runs/<config name>-<UTC time>; an empty --out
// and --resume with --out, --overwrite or --shard are refused.
func TestRunRequestOutDir(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		q       RunRequest
		cfgOut  string
		want    string
		wantErr string
	}{
		{"--out", RunRequest{Out: "mine", OutGiven: true}, "cfg-out", "mine", ""},
		{"config's out", RunRequest{}, "cfg-out", "cfg-out", ""},
		{"default", RunRequest{}, "", filepath.Join("runs", "quick-20261202-030405"), ""},
		{"resume", RunRequest{Resume: "runs/old"}, "cfg-out", "runs/old", ""},
		{"empty --out", RunRequest{OutGiven: true}, "cfg-out", "", "--out: empty folder name"},
		{"resume with --out", RunRequest{Resume: "runs/old", Out: "x", OutGiven: true}, "", "", "--resume"},
		{"resume with --overwrite", RunRequest{Resume: "runs/old", Overwrite: true}, "", "", "--resume"},
		{"resume with --shard", RunRequest{Resume: "runs/old", Sharded: true}, "", "", "--resume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Now = now
			got, err := tc.q.outDir(&Config{Out: tc.cfgOut}, "configs/quick.yaml")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("outDir = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestRunDeadline: a negative --deadline is refused before the config is
// read; the run's context ends at the deadline with a cause naming it; no
// deadline leaves the context to its parent.
func TestRunDeadline(t *testing.T) {
	t.Parallel()
	if _, err := PrepareRun(context.Background(), RunRequest{ConfigPath: "no-such.yaml", Deadline: -time.Second}, nil); err == nil || !strings.Contains(err.Error(), "--deadline -1s: must be ≥ 0") {
		t.Errorf("negative deadline: %v", err)
	}
	ctx, cancel := PreparedRun{Deadline: time.Millisecond}.Context(context.Background())
	defer cancel()
	<-ctx.Done()
	if err := context.Cause(ctx); err == nil || !strings.Contains(err.Error(), "the run deadline (--deadline 1ms) passed") {
		t.Errorf("cause %v", err)
	}
	ctx, cancel = PreparedRun{}.Context(context.Background())
	if _, ok := ctx.Deadline(); ok {
		t.Error("no deadline asked, one set")
	}
	cancel()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("after cancel: %v", ctx.Err())
	}
}
