package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/loadgen"
)

// mechanicsConfig is a small two-arm run on the embedded simulator. Each
// shard launches its own simulator here (the CLI refuses that for N > 1: see
// CheckServer); what these tests check does not depend on the server: the
// slicing, the timetable, the shard folders and every check of the merge.
const mechanicsConfig = `
name: shard-mechanics
seed: %d
trace:
  path: %s
  clamp_context: 2048
load:
  mode: poisson
  rates_rps: [8]
  duration: 2s
server:
  kind: sim
request:
  timeout: 10s
arms:
  - name: baseline
  - name: fast
    sim_overrides: {rmsnorm: 2}
repetitions: 1
energy:
  disabled: true
`

func writeConfig(t *testing.T, dir string, seed int) string {
	t.Helper()
	trace, err := filepath.Abs(filepath.Join("..", "configs", "traces", "AzureLLMInferenceTrace_conv-head2000.csv"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, fmt.Sprintf("c%d.yaml", seed))
	if err := os.WriteFile(p, []byte(fmt.Sprintf(mechanicsConfig, seed, trace)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func options(t *testing.T, cfgPath, out string) (*experiment.Config, experiment.Options) {
	t.Helper()
	cfg, raw, err := experiment.Load(cfgPath, experiment.CheckFiles())
	if err != nil {
		t.Fatal(err)
	}
	return cfg, experiment.Options{ConfigPath: cfgPath, ConfigRaw: raw, OutDir: out, Log: io.Discard, Warn: io.Discard}
}

func recordsOf(t *testing.T, path string) []loadgen.Record {
	t.Helper()
	recs, err := loadgen.ReadRecordsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestMergeMechanics runs an unsplit run and three shards of it (plus a
// shard of another config) in this process, merges the three, and checks
// the merged run against the unsplit one; then every way a merge must refuse.
func TestMergeMechanics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four simulated experiments (about 15 s)")
	}
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, 5)
	foreignPath := writeConfig(t, dir, 6)
	ctx := context.Background()

	single := filepath.Join(dir, "single")
	cfg, opt := options(t, cfgPath, single)
	if _, err := experiment.Run(ctx, cfg, opt); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(time.Second)
	shardDir := func(i int) string { return filepath.Join(dir, fmt.Sprintf("s%d", i)) }
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, spec := cfgPath, Spec{i, 3}
			if i == 3 { // shard 2/3 of another config (seed)
				path, spec = foreignPath, Spec{2, 3}
			}
			cfg, opt := options(t, path, shardDir(i))
			_, errs[i] = run(ctx, cfg, opt, Options{Spec: spec, StartAt: start, Gap: 2 * time.Second})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}

	merged := filepath.Join(dir, "merged")
	written := &experiment.Written{}
	res, err := Merge(context.Background(), []string{shardDir(2), shardDir(0), shardDir(1)}, MergeOptions{OutDir: merged, Log: io.Discard, Warn: io.Discard, Written: written})
	if err != nil {
		t.Fatal(err)
	}
	// The merge records what it wrote (the console's list).
	if got, want := written.Names(nil), []string{experiment.RecordsFile, experiment.ResultsFile, experiment.MarkdownFile, experiment.HTMLFile, HDRLogFile, ShardsFile}; !slices.Equal(got, want) {
		t.Errorf("merge recorded %v as written, want %v", got, want)
	}
	// A second merge into the same folder is refused before anything is
	// read or replaced (nor does it wait for shards).
	if _, err := Merge(context.Background(), []string{shardDir(0)}, MergeOptions{OutDir: merged, Wait: time.Hour}); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Errorf("merging into a merged folder: %v, want refused as already holding a run", err)
	}
	// Two arms and the baseline's A/A replicate: three cells.
	if !res.Complete || len(res.Cells) != 3 || len(res.RunOrder) != 3 {
		t.Fatalf("merged: complete %v, %d cells of %d; want complete, 3 of 3", res.Complete, len(res.Cells), len(res.RunOrder))
	}
	var shifts []MergedShard
	b, err := os.ReadFile(filepath.Join(merged, ShardsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &shifts); err != nil {
		t.Fatal(err)
	}

	// The same scheduled requests (ids and offsets), each exactly once.
	want := groupRecords(recordsOf(t, filepath.Join(single, experiment.RecordsFile)))
	got := groupRecords(recordsOf(t, filepath.Join(merged, experiment.RecordsFile)))
	if len(got) != len(want) {
		t.Fatalf("merged records cover %d cells, the unsplit run %d", len(got), len(want))
	}
	for order, key := range res.RunOrder {
		id := cellID{key.Arm, key.OfferedLoadRPS, key.Repetition}
		plan := map[int]time.Duration{}
		for _, r := range want[id] {
			plan[r.RequestID] = r.ScheduledAt
		}
		seen := map[int]bool{}
		for _, r := range got[id] {
			if seen[r.RequestID] {
				t.Fatalf("cell %d: request %d merged twice", order, r.RequestID)
			}
			seen[r.RequestID] = true
			at, ok := plan[r.RequestID]
			if !ok {
				t.Fatalf("cell %d: request %d is not in the unsplit run", order, r.RequestID)
			}
			// Merged records sit on the merged clock: their shard's shift
			// added to every time, the schedule's offset included.
			shift := time.Duration(shifts[r.RequestID%3].ShiftMs[order] * float64(time.Millisecond))
			if d := r.ScheduledAt - shift - at; d.Abs() > time.Microsecond {
				t.Fatalf("cell %d request %d: scheduled at %s on the merged clock (shift %s), %s unsplit", order, r.RequestID, r.ScheduledAt, shift, at)
			}
		}
		if len(seen) != len(plan) {
			t.Fatalf("cell %d: %d requests merged, %d scheduled", order, len(seen), len(plan))
		}
		if n := res.Cells[order].States[string(loadgen.StateOK)]; n != len(plan) {
			t.Errorf("cell %d: %d ok in results.json, want all %d", order, n, len(plan))
		}
	}
	for _, f := range []string{experiment.ResultsFile, experiment.MarkdownFile, experiment.HTMLFile, HDRLogFile} {
		if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
			t.Errorf("merged folder lacks %s: %v", f, err)
		}
	}
	// The merged HDR log holds every value the shards' logs hold.
	f, err := os.Open(filepath.Join(merged, HDRLogFile))
	if err != nil {
		t.Fatal(err)
	}
	mh, err := readHDRLog(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for tag, h := range mh {
		var sum int64
		for i := range 3 {
			f, err := os.Open(filepath.Join(shardDir(i), HDRLogFile))
			if err != nil {
				t.Fatal(err)
			}
			sh, err := readHDRLog(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			sum += sh[tag].TotalCount()
		}
		if h.TotalCount() != sum || (strings.HasSuffix(tag, ".e2e") && sum == 0) {
			t.Errorf("%s: merged %d values, shards %d", tag, h.TotalCount(), sum)
		}
	}

	// Every way a merge must refuse, each naming what is wrong; nothing is written.
	copyDir := func(src, name string, edit func(dir string)) string {
		dst := filepath.Join(dir, name)
		if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
		edit(dst)
		return dst
	}
	editJSON := func(path string, edit func(m map[string]any)) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	killed := copyDir(shardDir(1), "killed", func(d string) {
		// What a shard killed mid-run leaves: shard.json without its finished mark.
		editJSON(filepath.Join(d, ManifestFile), func(m map[string]any) { m["finished"] = false })
	})
	reordered := copyDir(shardDir(2), "reordered", func(d string) {
		editJSON(filepath.Join(d, experiment.ResultsFile), func(m map[string]any) {
			o := m["run_order"].([]any)
			o[0], o[1] = o[1], o[0]
			m["run_order"] = o
		})
	})
	lost := copyDir(shardDir(2), "lost", func(d string) {
		// A records file that lost its last line.
		p := filepath.Join(d, experiment.RecordsFile)
		b, _ := os.ReadFile(p)
		lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
		_ = os.WriteFile(p, []byte(strings.Join(lines[:len(lines)-1], "")), 0o644)
	})
	for _, tc := range []struct {
		name string
		dirs []string
		want []string
	}{
		{"missing shard", []string{shardDir(0), shardDir(1)}, []string{"shard 2/3 missing"}},
		{"missing folder", []string{shardDir(0), shardDir(1), filepath.Join(dir, "nope")}, []string{filepath.Join(dir, "nope")}},
		{"duplicated shard", []string{shardDir(0), shardDir(1), shardDir(1), shardDir(2)}, []string{"shard 1/3 appears twice", shardDir(1)}},
		{"another config", []string{shardDir(0), shardDir(1), shardDir(3)}, []string{shardDir(3), "not from the same run", "config"}},
		{"killed shard", []string{shardDir(0), killed, shardDir(2)}, []string{"shard 1/3 (" + killed + ") did not finish"}},
		{"arm order differs", []string{shardDir(0), shardDir(1), reordered}, []string{reordered, "arm/repetition order"}},
		{"lost record", []string{shardDir(0), shardDir(1), lost}, []string{"missing: 1 from shard 2/3 (" + lost + ")"}},
	} {
		out := filepath.Join(dir, "refused-"+strings.ReplaceAll(tc.name, " ", "-"))
		_, err := Merge(context.Background(), tc.dirs, MergeOptions{OutDir: out, Log: io.Discard, Warn: io.Discard})
		if err == nil {
			t.Errorf("%s: merged", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: the refused merge wrote %s", tc.name, out)
		}
	}

	// Shards on several hosts without a clock reference are said to be
	// unaligned by an unknown amount; on one host (above) they share a clock.
	if slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "without a clock reference") }) {
		t.Errorf("shards of one host: warnings %q name the clock reference", res.Warnings)
	}
	otherHost := copyDir(shardDir(1), "other-host", func(d string) {
		editJSON(filepath.Join(d, experiment.ResultsFile), func(m map[string]any) {
			m["manifest"].(map[string]any)["machine"] = "elsewhere (linux/amd64, 8 CPUs)"
		})
	})
	res2, err := Merge(context.Background(), []string{shardDir(0), otherHost, shardDir(2)}, MergeOptions{OutDir: filepath.Join(dir, "merged-hosts"), Log: io.Discard, Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res2.Warnings, func(w string) bool {
		return strings.Contains(w, "shards 0/3, 1/3, 2/3 ran on 2 hosts without a clock reference")
	}) {
		t.Errorf("shards of two hosts, clocks unmeasured: warnings %q", res2.Warnings)
	}

	// Equal commits prove the same code only when they are known and clean:
	// an unknown or dirty one merges with a warning.
	for k, commit := range []string{"", "0123abc-dirty", "0123abc"} {
		var dirs []string
		for i := range 3 {
			dirs = append(dirs, copyDir(shardDir(i), fmt.Sprintf("commit%d-%d", k, i), func(d string) {
				editJSON(filepath.Join(d, experiment.ResultsFile), func(m map[string]any) {
					m["manifest"].(map[string]any)["git_commit"] = commit
				})
			}))
		}
		res, err := Merge(context.Background(), dirs, MergeOptions{OutDir: filepath.Join(dir, fmt.Sprintf("merged-commit%d", k)), Log: io.Discard, Warn: io.Discard})
		if err != nil {
			t.Fatalf("commit %q: %v", commit, err)
		}
		warned := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "cannot prove that every shard ran the same code") })
		if want := commit != "0123abc"; warned != want {
			t.Errorf("commit %q: warned %v, want %v (warnings %q)", commit, warned, want, res.Warnings)
		}
	}
}
