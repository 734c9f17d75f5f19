package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
)

const resumeConfig = `
name: resume-test
seed: 11
trace:
  path: ../configs/traces/AzureLLMInferenceTrace_conv-head2000.csv
  clamp_context: 7168
load:
  rates_rps: [2, 4]
  warmup: 500ms
  duration: 2s
server:
  kind: sim
arms:
  - name: baseline
  - name: gemm-2x
    sim_overrides: {gate_up_proj: 2}
amdahl:
  target_op: gate_up_proj
`

// resumeRun runs cfgText into out; stopAfter > 0 cancels the run's context
// as soon as that many cells have ended (deterministic: from AfterCell, the
// cell itself complete).
func resumeRun(t *testing.T, cfgText, out string, resume bool, stopAfter int) (*report.Results, error) {
	t.Helper()
	cfg, err := Parse(strings.NewReader(cfgText), "resume.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ended := 0
	opt := Options{OutDir: out, ConfigRaw: []byte(cfgText), Log: &bytes.Buffer{}, Resume: resume}
	if stopAfter > 0 {
		opt.AfterCell = func(CellMeasured) {
			if ended++; ended == stopAfter {
				cancel(errors.New("test interrupt"))
			}
		}
	}
	return Run(ctx, cfg, opt)
}

// cellsPerRecords counts records.jsonl's records per cell (arm, load, repetition).
func cellsPerRecords(t *testing.T, dir string) map[report.CellKey]int {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := loadgen.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	n := map[report.CellKey]int{}
	for _, r := range recs {
		n[report.CellKey{Arm: r.Arm, OfferedLoadRPS: r.OfferedLoad, Repetition: r.Repetition}]++
	}
	return n
}

func readResults(t *testing.T, dir string) report.Results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestResume interrupts a simulated run after its first cell, resumes it,
// and compares it with an uninterrupted run of the same config and seed:
// the same cells in the same order, each with its schedule's requests, the
// first cell kept as measured (records, start time, energy), the others
// measured by the resumed run; a resume with another config is refused
// naming the difference, and a kept cell missing a record runs again.
func TestResume(t *testing.T) {
	whole := t.TempDir()
	full, err := resumeRun(t, resumeConfig, whole, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	cut := t.TempDir()
	part, err := resumeRun(t, resumeConfig, cut, false, 1)
	if err == nil || part == nil || part.Complete || len(part.Cells) != 1 {
		t.Fatalf("interrupted run: err %v, results %+v", err, part)
	}
	interrupted := readResults(t, cut)
	cutRecords, err := os.ReadFile(filepath.Join(cut, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}

	// Another config (one more request cap) is refused, naming the config, and
	// leaves the interrupted run as it was.
	// The keys that differ are named with both values, and the refusal
	// comes before the pre-run Amdahl bounds are printed.
	other := strings.Replace(resumeConfig, "duration: 2s", "duration: 2s\n  max_requests: 3", 1)
	otherCfg, err := Parse(strings.NewReader(other), "resume.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	var otherLog bytes.Buffer
	_, err = Run(context.Background(), otherCfg, Options{OutDir: cut, ConfigRaw: []byte(other), Log: &otherLog, Resume: true})
	if err == nil || !strings.Contains(err.Error(), "differs from the interrupted one in its config") {
		t.Fatalf("resume with another config: %v", err)
	}
	// Named by the key written in the config, not the Go field.
	if !strings.Contains(err.Error(), "load.max_requests (A=not set, B=3)") || strings.Contains(err.Error(), "MaxRequests") {
		t.Errorf("resume with another config does not name the config key that differs: %v", err)
	}
	if strings.Contains(otherLog.String(), "Amdahl") {
		t.Errorf("a refused resume printed the Amdahl bounds first:\n%s", otherLog.String())
	}
	if b, _ := os.ReadFile(filepath.Join(cut, RecordsFile)); !bytes.Equal(b, cutRecords) {
		t.Fatal("a refused resume changed records.jsonl")
	}

	// A copy whose records.jsonl lost its last line keeps no cell.
	damaged := t.TempDir()
	for _, f := range []string{RecordsFile, ResultsFile, CellsFile} {
		b, err := os.ReadFile(filepath.Join(cut, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == RecordsFile {
			b = b[:bytes.LastIndexByte(bytes.TrimSuffix(b, []byte("\n")), '\n')+1]
		}
		if err := os.WriteFile(filepath.Join(damaged, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	res, err := resumeRun(t, resumeConfig, cut, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.ResumedFrom == nil || res.ResumedFrom.KeptCells != 1 || res.ResumedFrom.RerunCells != len(full.Cells)-1 || !res.Complete {
		t.Fatalf("resumed: %v %+v complete %v", res.Resumed, res.ResumedFrom, res.Complete)
	}
	// A resumed run is the interrupted run finished: its run_id and
	// created_at, with the resumption's start in resumed_at.
	if res.RunID == "" || res.RunID != interrupted.RunID || !res.CreatedAt.Equal(interrupted.CreatedAt) {
		t.Errorf("resumed run_id %q created %v; the interrupted run's %q %v", res.RunID, res.CreatedAt, interrupted.RunID, interrupted.CreatedAt)
	}
	if len(res.ResumedAt) != 1 || res.ResumedAt[0].Before(interrupted.CreatedAt) {
		t.Errorf("resumed_at %v, want the one resumption, after %v", res.ResumedAt, interrupted.CreatedAt)
	}
	if full.RunID == interrupted.RunID {
		t.Errorf("two runs share run_id %q", full.RunID)
	}
	if !reflect.DeepEqual(res.RunOrder, full.RunOrder) || !reflect.DeepEqual(res.Manifest.ArmOrder, full.Manifest.ArmOrder) {
		t.Errorf("order: resumed %v %v, uninterrupted %v %v", res.RunOrder, res.Manifest.ArmOrder, full.RunOrder, full.Manifest.ArmOrder)
	}
	if len(res.Cells) != len(full.Cells) {
		t.Fatalf("%d cells resumed, %d uninterrupted", len(res.Cells), len(full.Cells))
	}
	wantRecs, gotRecs := cellsPerRecords(t, whole), cellsPerRecords(t, cut)
	for i, c := range res.Cells {
		u := full.Cells[i]
		key := report.CellKey{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition}
		if key != (report.CellKey{Arm: u.Arm, OfferedLoadRPS: u.OfferedLoadRPS, Repetition: u.Repetition}) || c.Order != u.Order {
			t.Errorf("cell %d: %+v (order %d), uninterrupted %s at %g rep %d (order %d)", i, key, c.Order, u.Arm, u.OfferedLoadRPS, u.Repetition, u.Order)
		}
		total := 0
		for _, n := range c.States {
			total += n
		}
		utotal := 0
		for _, n := range u.States {
			utotal += n
		}
		if total != utotal || gotRecs[key] != wantRecs[key] || gotRecs[key] < total {
			t.Errorf("cell %d: %d requests, %d records; uninterrupted %d requests, %d records", i, total, gotRecs[key], utotal, wantRecs[key])
		}
		if c.Kept != (i == 0) || c.StartedAt == nil {
			t.Errorf("cell %d: kept %v, started_at %v", i, c.Kept, c.StartedAt)
		}
	}
	if !res.Cells[0].StartedAt.Equal(*interrupted.Cells[0].StartedAt) || !reflect.DeepEqual(res.Cells[0].States, interrupted.Cells[0].States) {
		t.Errorf("kept cell: started %v states %v, measured %v %v", res.Cells[0].StartedAt, res.Cells[0].States, interrupted.Cells[0].StartedAt, interrupted.Cells[0].States)
	}
	if res.Energy == nil || interrupted.Energy == nil || len(res.Energy.Cells) != len(res.Cells) || len(interrupted.Energy.Cells) != 1 {
		t.Fatalf("energy: resumed %+v, interrupted %+v", res.Energy, interrupted.Energy)
	}
	if !reflect.DeepEqual(res.Energy.Cells[0], interrupted.Energy.Cells[0]) {
		t.Errorf("kept cell's energy:\n%+v\nmeasured:\n%+v", res.Energy.Cells[0], interrupted.Energy.Cells[0])
	}
	if res.Amdahl == nil || len(res.Amdahl.Loads) != len(full.Amdahl.Loads) {
		t.Errorf("amdahl: resumed %+v, uninterrupted %+v", res.Amdahl, full.Amdahl)
	}
	for _, f := range []string{MarkdownFile, HTMLFile} {
		b, err := os.ReadFile(filepath.Join(cut, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("Resumed run:")) || !bytes.Contains(b, []byte(res.Cells[0].StartedAt.UTC().Format("2006-01-02T15:04:05.000Z"))) {
			t.Errorf("%s says nothing of the resume or of the kept cell's start", f)
		}
	}

	dres, err := resumeRun(t, resumeConfig, damaged, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if dres.ResumedFrom.KeptCells != 0 || len(dres.Cells) != len(full.Cells) || dres.Cells[0].Kept {
		t.Errorf("damaged records: kept %d of %d cells", dres.ResumedFrom.KeptCells, len(dres.Cells))
	}
	if !strings.Contains(strings.Join(dres.Warnings, "\n"), "runs again") {
		t.Errorf("damaged records: no warning in %q", dres.Warnings)
	}
}

// TestResumeRefusesCompleteRun: a run that ended complete has nothing to
// resume; --resume on it is refused before anything is read further or
// rewritten (it used to run the capacity search again and could leave a
// finished run marked incomplete).
func TestResumeRefusesCompleteRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := json.Marshal(report.Results{SchemaVersion: report.SchemaVersion, Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = readResume(dir, &report.Results{}, Config{}, nil)
	if err == nil || !strings.Contains(err.Error(), "the run there is complete") || !strings.Contains(err.Error(), "nothing to resume") {
		t.Fatalf("--resume on a complete run: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, ResultsFile))
	if string(after) != string(b) {
		t.Error("results.json was rewritten")
	}
}

// TestPrepareRunRefusesCompleteResumeFirst: run --resume on a finished run
// is refused before the run is prepared: nothing (the config it resumes
// with, the pre-run announcement) is said first.
func TestPrepareRunRefusesCompleteResumeFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := filepath.Abs(filepath.Join("..", "configs", "quickstart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(report.Results{SchemaVersion: report.SchemaVersion, Complete: true, Manifest: report.Manifest{ConfigPath: cfg}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, q := range []RunRequest{{Resume: dir}, {Resume: dir, ConfigPath: cfg}} {
		var log strings.Builder
		_, err := PrepareRun(context.Background(), q, &log)
		if err == nil || !strings.Contains(err.Error(), "nothing to resume") {
			t.Errorf("config %q: err %v, want the complete run refused", q.ConfigPath, err)
		}
		if log.Len() > 0 {
			t.Errorf("config %q: said before refusing: %q", q.ConfigPath, log.String())
		}
	}
}

// TestResumeDrawsTheRunsNoise: with the simulator's noise model on, a run
// resumed mid-way draws for every cell it measures the run factor the
// uninterrupted run drew for that cell, a cell whose server the original
// run reused (the A/A replicate's second cell, after its first was kept)
// included. It replayed the kept cells' draws instead: its new cells
// repeated the earlier ones to within a millisecond, the resolution shrank
// and a no-effect candidate read FAIL.
func TestResumeDrawsTheRunsNoise(t *testing.T) {
	cfgText := strings.Replace(strings.Replace(resumeConfig, "  kind: sim\n", "  kind: sim\n  sim:\n    noise: {run_sigma: 0.03, step_sigma: 0.015}\n", 1),
		"  rates_rps: [2, 4]\n", "  rates_rps: [4]\n", 1) + "repetitions: 2\n"
	factors := func(res *report.Results) map[report.CellKey]float64 {
		out := map[report.CellKey]float64{}
		for arm, v := range res.Manifest.Server {
			info, _ := v.(map[string]any)
			recs, _ := info[trueFractionsKey].([]servers.SimTrueFraction)
			for _, r := range recs {
				out[report.CellKey{Arm: arm, OfferedLoadRPS: r.OfferedLoadRPS, Repetition: r.Repetition}] = r.NoiseRunFactor
			}
		}
		return out
	}
	full, err := resumeRun(t, cfgText, t.TempDir(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := factors(full)
	// Stop after the first block's last cell: the next cell is the same
	// arm's (A B C | C B A), so the resumed run starts a server where the
	// uninterrupted one reused it.
	names := map[string]bool{}
	for _, k := range full.RunOrder {
		names[k.Arm] = true
	}
	arms := len(names)
	if arms < 2 || full.RunOrder[arms-1].Arm != full.RunOrder[arms].Arm {
		t.Fatalf("run order %+v: want a block boundary inside one arm's stretch", full.RunOrder)
	}
	cut := t.TempDir()
	if _, err := resumeRun(t, cfgText, cut, false, arms); err == nil {
		t.Fatal("interrupted run: no error")
	}
	res, err := resumeRun(t, cfgText, cut, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := factors(res)
	compared := 0
	for _, k := range res.RunOrder[arms:] {
		key := report.CellKey{Arm: k.Arm, OfferedLoadRPS: k.OfferedLoadRPS, Repetition: k.Repetition}
		g, ok := got[key]
		if !ok || want[key] == 0 {
			t.Fatalf("cell %+v: no run factor (resumed %v, uninterrupted %v)", key, got, want)
		}
		if g != want[key] {
			t.Errorf("cell %+v: run factor %v resumed, %v uninterrupted", key, g, want[key])
		}
		compared++
	}
	if compared != len(full.RunOrder)-arms {
		t.Fatalf("compared %d cells", compared)
	}
}
