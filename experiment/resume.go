package experiment

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/traces"
)

// CellsFile holds, one JSON line per finished cell in run order, what the
// cell measured beyond its records (resumeCell): what `run --resume`
// needs to keep the cell without measuring it again.
const CellsFile = "cells.jsonl"

// resumeCell is one line of CellsFile.
type resumeCell struct {
	CellMeasured
	// Energy (in CellMeasured) is the window trimmed to the cell's measured
	// window as the energy section uses it (cellEnergy): the raw samples a
	// later trim needs do not travel.
	// Records is how many records the cell wrote to records.jsonl.
	Records int `json:"records"`
	// Complete is true when the cell ran to its end.
	Complete bool `json:"complete"`
}

// kept is the part of an interrupted run that `run --resume` keeps: its
// complete cells with their records, and its results for the report.
type kept struct {
	cells map[cellKey]keptCell
	prior report.Results
	// done marks the kept cells already put back into the new run.
	done map[cellKey]bool
}

type keptCell struct {
	m       measured
	records []loadgen.Record
}

// readResume reads the interrupted run in dir for `run --resume`: it
// refuses a run of another config, trace or code (saying which differs) and
// keeps each cell that ran to its end with all its scheduled records in
// records.jsonl (records past a damaged line are not read: their cells run
// again).
//
// cur is the new run's results as begun (newResults): its config hash, its
// recorded config (manifest.config_requested, whose keys that differ are
// named as compare names them, report.ConfigKeyDiffs, secrets never
// shown), its trace hash and code commit.
func readResume(dir string, cur *report.Results, cfg Config, scheds []traces.Schedule) (*kept, []string, error) {
	configSHA, traceSHA, commit := cur.Manifest.ConfigSHA256, cur.Trace.SHA256, cur.Manifest.GitCommit
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, nil, fmt.Errorf("--resume %s: no run to resume: %w", dir, err)
	}
	var prior report.Results
	if err := json.Unmarshal(b, &prior); err != nil {
		return nil, nil, fmt.Errorf("--resume %s: %s: %w", dir, ResultsFile, err)
	}
	if err := resumable(dir, prior); err != nil {
		return nil, nil, err
	}
	var diff []string
	if prior.Manifest.ConfigSHA256 != configSHA {
		d := fmt.Sprintf("config (sha256 %s, the interrupted run's %s)", short(configSHA), short(prior.Manifest.ConfigSHA256))
		if k := report.ConfigKeyDiffs(prior, *cur); len(k) > 0 {
			d += "; config keys that differ (A: the interrupted run, B: this one): " + strings.Join(k, "; ")
		}
		diff = append(diff, d)
	}
	if prior.Trace.SHA256 != traceSHA {
		diff = append(diff, fmt.Sprintf("trace (sha256 %s, the interrupted run's %s)", short(traceSHA), short(prior.Trace.SHA256)))
	}
	if prior.Manifest.GitCommit != commit {
		diff = append(diff, fmt.Sprintf("code (commit %s, the interrupted run's %s)", orUnknown(commit), orUnknown(prior.Manifest.GitCommit)))
	}
	if len(diff) > 0 {
		return nil, nil, fmt.Errorf("--resume %s: refused: this run differs from the interrupted one in its %s; cells measured with other inputs cannot be mixed (start a new run with --out)", dir, strings.Join(diff, ", "))
	}
	var notes []string
	if commit == "" || strings.HasSuffix(commit, "-dirty") {
		notes = append(notes, fmt.Sprintf("the code's commit is %s: --resume cannot prove the kept cells were measured by the same code", orUnknown(commit)))
	}
	lines, err := readCellsFile(filepath.Join(dir, CellsFile))
	if err != nil {
		return nil, nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	f, err := os.Open(filepath.Join(dir, RecordsFile))
	if err != nil {
		return nil, nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	recs, rerr := loadgen.ReadRecords(f)
	f.Close()
	if rerr != nil {
		notes = append(notes, fmt.Sprintf("%s: %v; the %d records before it are read", RecordsFile, rerr, len(recs)))
	}
	byCell := map[cellKey][]loadgen.Record{}
	for _, rec := range recs {
		li := -1
		for i, r := range cfg.Load.RatesRPS {
			if r == rec.OfferedLoad {
				li = i
			}
		}
		k := cellKey{arm: rec.Arm, load: li, rep: rec.Repetition}
		byCell[k] = append(byCell[k], rec)
	}
	k := &kept{cells: map[cellKey]keptCell{}, prior: prior, done: map[cellKey]bool{}}
	for _, c := range lines {
		key := cellKey{arm: c.Arm, load: c.Load, rep: c.Repetition}
		if c.Load < 0 || c.Load >= len(scheds) || !c.Complete {
			continue
		}
		rs := byCell[key]
		if len(rs) != c.Records || len(rs) != len(scheds[c.Load].Requests) {
			notes = append(notes, fmt.Sprintf("cell %s at %g req/s, repetition %d: %d of its %d records in %s; it runs again",
				c.Arm, cfg.Load.RatesRPS[c.Load], c.Repetition, len(rs), len(scheds[c.Load].Requests), RecordsFile))
			continue
		}
		m := c.measured(rs)
		m.energyTrimmed = true
		k.cells[key] = keptCell{m: m, records: rs}
	}
	return k, notes, nil
}

// CheckResumable refuses a --resume of dir when its results.json records a
// complete run (nothing to resume) or cannot be read: PrepareRun calls it
// before it loads the config or prints anything, so a refused resume says
// nothing else first.
func CheckResumable(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return fmt.Errorf("--resume %s: no run to resume: %w", dir, err)
	}
	var prior report.Results
	if err := json.Unmarshal(b, &prior); err != nil {
		return fmt.Errorf("--resume %s: %s: %w", dir, ResultsFile, err)
	}
	return resumable(dir, prior)
}

// resumable refuses prior, the run in dir, when it completed.
func resumable(dir string, prior report.Results) error {
	if prior.Complete {
		return fmt.Errorf("--resume %s: the run there is complete (%s: complete true): nothing to resume; start a new run with --out", dir, ResultsFile)
	}
	return nil
}

// ResumeConfigPath is the config path the interrupted run in dir was started
// with (its results.json's manifest.config_path, as given on that command
// line, so a relative path resolves against the working folder), for `run
// --resume DIR` given no config. A folder without a run, or a recorded path
// that no longer names a file from here, is an error saying to give the
// config. The resumed run still refuses a config whose sha256 differs.
func ResumeConfigPath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return "", fmt.Errorf("--resume %s: no run to resume: %w", dir, err)
	}
	var prior struct {
		Manifest struct {
			ConfigPath string `json:"config_path"`
		} `json:"manifest"`
	}
	if err := json.Unmarshal(b, &prior); err != nil {
		return "", fmt.Errorf("--resume %s: %s: %w", dir, ResultsFile, err)
	}
	p := prior.Manifest.ConfigPath
	if p == "" {
		return "", fmt.Errorf("--resume %s: %s names no config: give it (transferlab run CONFIG --resume %s)", dir, ResultsFile, dir)
	}
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		return "", fmt.Errorf("--resume %s: the interrupted run's config %s (%s's manifest.config_path) is not a file from this folder: give it (transferlab run CONFIG --resume %s)", dir, p, ResultsFile, dir)
	}
	return p, nil
}

// readCellsFile reads CellsFile; a damaged last line (a killed run) ends it.
func readCellsFile(path string) ([]resumeCell, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []resumeCell
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var c resumeCell
		if err := dec.Decode(&c); err != nil {
			if errors.Is(err, io.EOF) || len(out) > 0 {
				return out, nil
			}
			return out, fmt.Errorf("%s: %w", CellsFile, err)
		}
		out = append(out, c)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return orUnknown(h)
}

// keepCell puts kept cell k back into the run at its place in the run
// order: its records into records.jsonl, its summary into the results, its
// line into CellsFile. It measures nothing.
func (r *runner) keepCell(kc keptCell) error {
	for i := range kc.records {
		if err := r.jsonl.Add(&kc.records[i]); err != nil {
			return fmt.Errorf("records: %w", err)
		}
	}
	r.kept.done[kc.m.key] = true
	r.res.Manifest.ArmOrder = append(r.res.Manifest.ArmOrder, kc.m.key.arm)
	r.cells = append(r.cells, kc.m)
	r.addCell(kc.m)
	r.res.Cells[len(r.res.Cells)-1].Kept = true
	r.res.ResumedFrom.KeptCells++
	r.saveCell(kc.m)
	return r.writeResults()
}

// keepRest puts back the kept cells the run did not reach (it stopped
// before them): nothing already measured is lost.
func (r *runner) keepRest() {
	if r.kept == nil {
		return
	}
	for _, k := range r.res.RunOrder {
		key := cellKey{arm: k.Arm, load: loadIndex(r.cfg.Load.RatesRPS, k.OfferedLoadRPS), rep: k.Repetition}
		if kc, ok := r.kept.cells[key]; ok && !r.kept.done[key] {
			if err := r.keepCell(kc); err != nil {
				fmt.Fprintf(r.warn, "warning: keeping cell %s at %g req/s: %v\n", k.Arm, k.OfferedLoadRPS, err)
			}
		}
	}
}

// saveCell appends m's line to CellsFile. A failure is a warning: the run
// goes on, but cannot be resumed past this cell.
func (r *runner) saveCell(m measured) {
	if r.cellsOut == nil {
		return
	}
	c := resumeCell{CellMeasured: m.export(), Records: len(m.records), Complete: m.summary.Complete && r.res.Cells[len(r.res.Cells)-1].Incomplete == ""}
	if m.energy != nil {
		w := cellEnergy(m)
		c.Energy = &w
	}
	b, err := json.Marshal(c)
	if err == nil {
		_, err = r.cellsOut.Write(append(b, '\n'))
	}
	if err == nil {
		err = r.cellsOut.Sync()
	}
	if err != nil {
		fmt.Fprintf(r.warn, "warning: %s: %v; `run --resume` would measure this cell again\n", CellsFile, err)
		r.cellsOut.Close()
		r.cellsOut = nil
	}
}
