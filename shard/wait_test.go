package shard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWaitFinishedStopsAtAShardThatEndedEarly: a merge waiting for its
// shards stops once one of them says it ended early (the merge needs every
// shard), even with another shard folder still empty (a pod that failed
// before writing anything) and an hour left to wait; the merge then names
// the shard that ended.
func TestWaitFinishedStopsAtAShardThatEndedEarly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dirs := []string{filepath.Join(dir, "shard-0"), filepath.Join(dir, "shard-1"), filepath.Join(dir, "shard-2")}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := (&Manifest{Shard: Spec{0, 3}, Finished: true}).write(dirs[0]); err != nil {
		t.Fatal(err)
	}
	// Shard 2 ended early: a shard stopped as it waits for its first cell
	// (its context ends, as SIGTERM ends it when the Job controller fails
	// the Job) writes its results, incomplete, and says so in shard.json.
	cfg, opt := options(t, writeConfig(t, dir, 7), dirs[2])
	if err := os.Remove(dirs[2]); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		for rctx.Err() == nil {
			if _, err := os.Stat(filepath.Join(dirs[2], ManifestFile)); err == nil {
				stop()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	if _, err := run(rctx, cfg, opt, Options{Spec: Spec{2, 3}, StartAt: time.Now().Add(time.Hour), Gap: time.Second}); err == nil {
		t.Fatal("the stopped shard returned no error")
	}
	if m, err := readManifest(dirs[2]); err != nil || !m.Finished || !strings.HasPrefix(m.EndedEarly, "incomplete: ") {
		t.Fatalf("shard.json of the stopped shard: %+v, %v; want finished, ended early", m.EndedEarly, err)
	}
	// The bound only keeps a broken WaitFinished from hanging the test; it
	// returns nil at once when it sees the mark.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := WaitFinished(ctx, dirs, time.Hour, 10*time.Millisecond); err != nil {
		t.Fatalf("WaitFinished kept waiting after shard 2/3 ended early: %v", err)
	}
	if _, err := readShard(dirs[2]); err == nil || !strings.Contains(err.Error(), "shard 2/3 ("+dirs[2]+") did not complete") {
		t.Errorf("merge error for the shard that ended early: %v", err)
	}
}

// TestWaitFinishedStopsAtAKilledShard: a shard killed outright (SIGKILL,
// out of memory) writes no mark, but its heartbeat stops: a merge waiting
// with an hour left stops once the beats have not moved for StaleBeats
// periods, and names the shard with its last heartbeat. A running shard
// rewrites shard.json with a growing beat count while it waits for its
// first cell, and stops beating when it ends.
func TestWaitFinishedStopsAtAKilledShard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dirs := []string{filepath.Join(dir, "shard-0"), filepath.Join(dir, "shard-1")}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := (&Manifest{Shard: Spec{0, 2}, Finished: true}).write(dirs[0]); err != nil {
		t.Fatal(err)
	}
	beatAt := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	if err := (&Manifest{Shard: Spec{1, 2}, Beats: 3, BeatAt: beatAt, BeatEvery: 10 * time.Millisecond}).write(dirs[1]); err != nil {
		t.Fatal(err)
	}
	// The bound only keeps a broken WaitFinished from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := WaitFinished(ctx, dirs, time.Hour, 5*time.Millisecond); err != nil {
		t.Fatalf("WaitFinished kept waiting for shard 1/2, whose heartbeat stopped: %v", err)
	}
	_, err := readShard(dirs[1])
	for _, want := range []string{"shard 1/2 (" + dirs[1] + ") did not finish", "last heartbeat (every 10ms) was at 2026-12-02T06:00:00Z", "killed outright"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("merge error %v lacks %q", err, want)
		}
	}

	// A running shard beats.
	out := filepath.Join(dir, "running")
	cfg, opt := options(t, writeConfig(t, dir, 7), out)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for rctx.Err() == nil {
			if m, err := readManifest(out); err == nil && m.Beats >= 2 {
				stop()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	if _, err := run(rctx, cfg, opt, Options{Spec: Spec{1, 2}, StartAt: time.Now().Add(time.Hour), Gap: time.Second, Heartbeat: 10 * time.Millisecond}); err == nil {
		t.Fatal("the stopped shard returned no error")
	}
	m, err := readManifest(out)
	if err != nil || !m.Finished || m.Beats < 2 || m.BeatEvery != 10*time.Millisecond || m.BeatAt.IsZero() {
		t.Fatalf("shard.json of a shard that ran: beats %d every %s at %s, finished %v, %v; want ≥ 2 beats, finished", m.Beats, m.BeatEvery, m.BeatAt, m.Finished, err)
	}
	after := m.Beats
	time.Sleep(50 * time.Millisecond)
	if m, _ := readManifest(out); m.Beats != after {
		t.Errorf("the shard beat on after it ended: %d beats, then %d", after, m.Beats)
	}
}
