package experiment

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// CellMeasured is what one cell measured beyond its records: the replay's
// summary and the figures read from the server the process drove (profile,
// energy window). A process that replays one shard of a run keeps it per cell
// (Options.AfterCell) so that the shards can be merged by Rebuild.
type CellMeasured struct {
	Arm        string `json:"arm"`
	Load       int    `json:"load_index"`
	Repetition int    `json:"repetition"`
	// Summary is the replay's summary (Start is its time zero, wall clock).
	Summary loadgen.Summary `json:"summary"`
	// Profile is the addressable fraction over the cell (nil: not measured).
	Profile *amdahl.Fractions `json:"profile,omitempty"`
	// Energy is the cell's energy window (nil: sampling off). Its raw
	// samples do not travel, so a rebuilt window is not re-trimmed.
	Energy *energy.Window `json:"energy,omitempty"`
	// EnergyError is the sampler's error text ("" when none).
	EnergyError string `json:"energy_error,omitempty"`
}

// export is m without its records.
func (m measured) export() CellMeasured {
	c := CellMeasured{Arm: m.key.arm, Load: m.key.load, Repetition: m.key.rep, Summary: m.summary, Profile: m.profile, Energy: m.energy}
	if m.eerr != nil {
		c.EnergyError = m.eerr.Error()
	}
	return c
}

// measured is c with its records, as the run held it (export's inverse).
func (c CellMeasured) measured(records []loadgen.Record) measured {
	m := measured{key: cellKey{arm: c.Arm, load: c.Load, rep: c.Repetition}, records: records, summary: c.Summary, profile: c.Profile, energy: c.Energy}
	if c.EnergyError != "" {
		m.eerr = errors.New(c.EnergyError)
		if c.EnergyError == energy.ErrUnavailable.Error() {
			m.eerr = energy.ErrUnavailable
		}
	}
	return m
}

// RebuildCell is one cell to rebuild: what was measured and its records.
type RebuildCell struct {
	CellMeasured
	Records []loadgen.Record
}

// Rebuild writes records.jsonl, results.json, report.md and report.html into
// opt.OutDir from cells measured by other processes (the shards of one run),
// through the same code as Run: each cell is summarised from its records by
// analysis.BuildCell and the cross-cell sections (Amdahl, energy, cost,
// validation) come from the cells' profiles and energy windows. head carries
// what the run's results hold apart from the cells (manifest, trace, SLO, run
// order, completeness, hook, warnings that are not about one cell); its
// cells and their warnings are rebuilt. cells are in run order. It reads the
// config's trace to rebuild the unsplit schedules (an unreadable trace is an
// error before anything is written). The output folder is locked as Run
// locks it.
func Rebuild(cfg *Config, opt Options, head report.Results, cells []RebuildCell) (*report.Results, error) {
	log, warn := opt.Writers()
	eff := cfg.Effective()
	// The unsplit schedules, as Run builds them (sections such as the
	// simulator's truth replay them).
	_, scheds, err := eff.schedules()
	if err != nil {
		return nil, fmt.Errorf("rebuilding the schedules: %w", err)
	}
	unlock, err := claimOutDir(opt.OutDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := head
	res.Cells = []report.Cell{}
	res.Warnings = slices.Clone(head.Warnings)
	if w := coldStartWarning(eff); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	recFile, err := opt.createOut(filepath.Join(opt.OutDir, RecordsFile))
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	opt.Written.Add(RecordsFile)
	jsonl := loadgen.NewJSONLSink(recFile)
	r := &runner{cfg: eff, opt: opt, log: log, warn: warn, res: &res, scheds: scheds}
	var errs []error
	for _, c := range cells {
		for i := range c.Records {
			if err := jsonl.Add(&c.Records[i]); err != nil {
				errs = append(errs, fmt.Errorf("records: %w", err))
				break
			}
		}
		if c.Load < 0 || c.Load >= len(eff.Load.RatesRPS) {
			return nil, fmt.Errorf("cell %s, load index %d: the config has %d offered loads", c.Arm, c.Load, len(eff.Load.RatesRPS))
		}
		m := c.measured(c.Records)
		r.cells = append(r.cells, m)
		r.addCell(m)
	}
	if err := errors.Join(jsonl.Close(), recFile.Sync(), recFile.Close()); err != nil {
		errs = append(errs, fmt.Errorf("records: %w", err))
	}
	if err := r.finish(); err != nil {
		errs = append(errs, err)
	}
	return &res, errors.Join(errs...)
}
