package experiment

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/internal/secret"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/telemetry"
	"github.com/transferlab/transferlab/traces"
)

// Options are the run's settings that are not part of the experiment config.
type Options struct {
	// ConfigPath is the config file (for the manifest and relative paths).
	ConfigPath string
	// ConfigRaw are the config file's bytes (hashed into the manifest).
	ConfigRaw []byte
	// OutDir receives records.jsonl, results.json, report.md, report.html, logs.
	OutDir string
	// Command is the command line, echoed in the manifest.
	Command []string
	// Log receives progress lines (os.Stderr when nil).
	Log io.Writer
	// Warn receives the warning lines: cells that lost more than
	// analysis.MaxNotOKShare of their requests, client-bound cells, missing
	// profiles or costs, telemetry trouble (Log when nil). `run --quiet`
	// discards Log but keeps Warn on stderr.
	Warn io.Writer
	// Progress, when set (a terminal), receives the whole run's progress bar
	// with its remaining time; without it the log gets a progress line at
	// each cell and every 30 s.
	Progress io.Writer
	// Slice, when set, replaces each offered load's schedule (load is its
	// index in load.rates_rps) by the part this process replays, as a shard
	// of a run split over several processes does. Requests keep their ids and
	// offsets. Its error stops the run before anything is measured.
	Slice func(load int, s traces.Schedule) (traces.Schedule, error)
	// BeforeCell, when set, is called just before the measured replay of
	// the order-th cell (0-based, in run order) starts, after its server is
	// up; it may wait (shards start each cell on a shared timetable). Its
	// error stops the run.
	BeforeCell func(ctx context.Context, order int, cell report.CellKey) error
	// AfterCell, when set, receives what each cell measured beyond its
	// records, as soon as the cell ends.
	AfterCell func(CellMeasured)
	// Resume, when set, continues the interrupted run in OutDir (`run
	// --resume`): it is refused when the config, trace or code differs from
	// that run's (the error says which); its cells that ran to their end
	// with all their records are kept, the others run (again) in the
	// recorded order, and the results are marked resumed.
	Resume bool
	// Written, when set, records the names the run writes at the top of
	// OutDir as it writes them (the console's "written to" list).
	Written *Written
	// wrap, when set, puts a stand-in around every output file the run
	// creates (tests: a file system that fills up); nil writes to the OS's.
	wrap func(*os.File) outFile
}

// Writers are where progress lines and warnings go: Log (os.Stderr when
// nil) and Warn (Log when nil).
func (o Options) Writers() (log, warn io.Writer) {
	log, warn = o.Log, o.Warn
	if log == nil {
		log = os.Stderr
	}
	if warn == nil {
		warn = log
	}
	return log, warn
}

// File names inside the output folder.
const (
	RecordsFile  = "records.jsonl"
	ResultsFile  = "results.json"
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
	// ServersDir holds each launched server's logs, configs and profiles.
	ServersDir = "servers"
)

// IsRunOutput reports whether name, an entry at the top of an output folder,
// is one a run writes (its files, the servers folder, the lock, a file being
// written atomically): anything else in the folder is not the run's.
func IsRunOutput(name string) bool {
	switch strings.TrimSuffix(name, ".tmp") {
	case RecordsFile, ResultsFile, MarkdownFile, HTMLFile, ServersDir, LockFile, CellsFile:
		return true
	}
	return false
}

// cellKey identifies one arm × offered load × repetition.
type cellKey struct {
	arm  string
	load int
	rep  int
}

// measured holds what one cell produced beyond its records.
type measured struct {
	key     cellKey
	records []loadgen.Record
	summary loadgen.Summary
	profile *amdahl.Fractions
	energy  *energy.Window
	// energyTrimmed: energy is already the window the report uses
	// (cellEnergy), as a cell kept by --resume holds it.
	energyTrimmed bool
	eerr          error
}

// Run executes the experiment and writes its outputs. It returns the results
// written (also on error, when some cells were measured: records and reports
// are on disk before the error returns) and an error when the run did not
// complete (interrupt, deadline, server death, instrument failure). Bad input
// found before anything is measured (trace, schedules, output folder) returns
// nil results and creates no output.
func Run(ctx context.Context, cfg *Config, opt Options) (*report.Results, error) {
	log, warn := opt.Writers()
	eff := cfg.Effective()
	lv, err := resolveLive(&eff, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	// Every line of the run's log and warnings passes through the scrubber;
	// one lock serialises both, which may be one writer (the progress
	// goroutine writes beside the run's own goroutine).
	var outMu sync.Mutex
	logW := lv.scrub.Writer(lockedWriter{mu: &outMu, w: log})
	warnW := lv.scrub.Writer(lockedWriter{mu: &outMu, w: warn})
	defer logW.Close()
	defer warnW.Close()
	log, warn = logW, warnW
	base, scheds, err := eff.schedules()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "trace %s: %s\n", base.Source, base.RowsText())
	// Judged on the whole schedules: a shard's slice is merged back into them.
	supportErrs := []error{sloSupport(eff, scheds), decisionSupport(eff, scheds)}
	orderWarning := base.OrderWarning()
	if orderWarning != "" {
		fmt.Fprintf(warn, "warning: trace %s\n", orderWarning)
	}
	if opt.Slice != nil {
		for i := range scheds {
			if scheds[i], err = opt.Slice(i, scheds[i]); err != nil {
				return nil, err
			}
		}
	}

	if err := checkValidated(eff.Arms); err != nil {
		return nil, err
	}
	// An endpoint that is unreachable, refuses the credentials or leaves
	// the model unclear ends the run before anything is written.
	var endpoints map[string]servers.Target
	if eff.Server.Kind == servers.Endpoint {
		if endpoints, err = probeEndpoints(ctx, &eff, lv); err != nil {
			return nil, lv.scrub.Error(err)
		}
	}
	unlock, err := claimOutDir(opt.OutDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := newResults(cfg, eff, opt, base)
	prior, err := resume(res, eff, opt, scheds, log, warn)
	if err != nil {
		return nil, err
	}
	// Analysis lines only once the servers answer and a resume is accepted:
	// a run against a dead URL, or a refused resume, fails before printing
	// any.
	announceBounds(log, warn, eff, scheds)
	for _, e := range supportErrs {
		if e != nil {
			fmt.Fprintf(warn, "warning: before the run: %v\n", cfg.errorf(e))
		}
	}
	recFile, err := opt.createOut(filepath.Join(opt.OutDir, RecordsFile))
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	opt.Written.Add(RecordsFile)
	jsonl := &recordsSink{JSONLSink: loadgen.NewJSONLSink(recFile), scrub: lv.scrub}
	cellsOut, err := opt.createOut(filepath.Join(opt.OutDir, CellsFile))
	if err != nil {
		recFile.Close()
		return nil, fmt.Errorf("%s: %w", CellsFile, err)
	}
	opt.Written.Add(CellsFile)

	for _, w := range append([]string{serverNotice(&eff, endpoints), coldStartWarning(eff)}, completionWarnings(&eff, endpoints)...) {
		if w != "" {
			res.Warnings = append(res.Warnings, w)
			fmt.Fprintf(warn, "warning: %s\n", w)
		}
	}
	r := &runner{cfg: eff, opt: opt, log: log, warn: warn, base: base, scheds: scheds, res: res, jsonl: jsonl,
		live: lv, endpoints: endpoints, model: eff.Request.Model, kept: prior, cellsOut: cellsOut,
		launcher: &servers.Launcher{Device: eff.Energy.Device, Log: log, Warn: warn, Headers: lv.headers, Scrub: lv.scrub}}
	if cs := eff.Extra.CapacitySearch; cs != nil {
		cs.planWholeTrace(len(base.Requests), eff.Load.RatesRPS)
	}
	r.startExport(ctx)
	runErr := r.runAll(ctx)
	r.stopExport(ctx)
	r.keepRest()
	if r.cellsOut != nil {
		if err := r.cellsOut.Close(); err != nil {
			fmt.Fprintf(warn, "warning: %s: %v\n", CellsFile, err)
		}
	}
	runErr = lv.scrub.Error(closeRecords(jsonl, recFile, runErr))
	if runErr != nil {
		res.Complete = false
		res.IncompleteReason = runErr.Error()
	} else {
		res.Complete = true
	}
	if werr := r.finish(); werr != nil {
		return res, errors.Join(runErr, lv.scrub.Error(werr))
	}
	return res, runErr
}

// checkValidated is the validation gate, before any server starts: a
// candidate whose report is missing, failing or stale is refused before
// device time is spent. A ceiling is never validated (its outputs are
// meaningless); its kernel file must declare itself one, and a candidate's
// must not.
func checkValidated(arms []ArmConfig) error {
	if err := checkArmRoles(arms); err != nil {
		return err
	}
	for _, a := range arms {
		if a.Override != nil && !a.IsCeiling() {
			if _, err := integrate.CheckValidation(*a.Override); err != nil {
				return fmt.Errorf("arm %s: %w", a.Name, err)
			}
		}
	}
	return nil
}

// newResults is the run's results before any cell: its manifest (command,
// config as requested and effective, both redacted, code and machine), the
// trace's accounting, the SLO and the ceiling arm.
func newResults(cfg *Config, eff Config, opt Options, base traces.Schedule) *report.Results {
	res := &report.Results{
		Cells:         []report.Cell{},
		SchemaVersion: report.SchemaVersion,
		CreatedAt:     time.Now().UTC(),
		RunID:         rand.Text(),
		Simulated:     eff.Server.Kind == servers.Sim,
		Aliases:       report.DefaultAliases(),
		Manifest: report.Manifest{
			Command:      opt.Command,
			ConfigPath:   opt.ConfigPath,
			ConfigSHA256: sha256Hex(opt.ConfigRaw),
			Requested:    cfg.redacted().recorded(),
			Effective:    eff.redacted(),
			Seed:         eff.Seed,
			GoVersion:    runtime.Version(),
			GitCommit:    gitCommit(),
			Machine:      machine(),
		},
		Trace: report.TraceInfo{
			Source:          base.Source,
			Format:          base.Format,
			SHA256:          base.SHA256,
			Rows:            len(base.Requests),
			RowsRead:        base.RowsRead,
			Skipped:         base.Skipped,
			SkippedByReason: base.SkippedByReason,
			SkippedLines:    base.SkippedLines,
			Dropped:         base.Dropped,
			Clamped:         base.Clamped,
			DurationS:       base.Duration().Seconds(),
			MeanRateRPS:     base.MeanRate(),
		},
		SLO: report.SLO{TTFTMs: eff.SLO.TTFTMs, TPOTMs: eff.SLO.TPOTMs, E2EMs: eff.SLO.E2EMs, Percentile: eff.SLO.Percentile},
	}
	if c, ok := ceilingArm(eff.Arms); ok {
		res.Ceiling = c.Name
	}
	if w := base.OrderWarning(); w != "" {
		res.Warnings = append(res.Warnings, "trace "+w)
	}
	return res
}

// resume, for a resumed run (opt.Resume), reads the interrupted run in
// opt.OutDir, refusing it when its config, trace or code differ (readResume),
// marks res resumed with the earlier run's hook counters, and warns of what
// the earlier run noted; it returns the cells kept (nil when not resuming).
func resume(res *report.Results, eff Config, opt Options, scheds []traces.Schedule, log, warn io.Writer) (*kept, error) {
	if !opt.Resume {
		return nil, nil
	}
	prior, notes, err := readResume(opt.OutDir, res, eff, scheds)
	if err != nil {
		return nil, err
	}
	res.Resumed = true
	res.ResumedFrom = &report.ResumedFrom{CreatedAt: prior.prior.CreatedAt, IncompleteReason: prior.prior.IncompleteReason, Server: prior.prior.Manifest.Server}
	// The same run, finished: its identity and first start stay, and this
	// resumption's start is added to those before it (report.Results.RunID).
	res.ResumedAt = append(slices.Clone(prior.prior.ResumedAt), res.CreatedAt)
	if prior.prior.RunID != "" {
		res.RunID = prior.prior.RunID
	}
	if !prior.prior.CreatedAt.IsZero() {
		res.CreatedAt = prior.prior.CreatedAt
	}
	// Hook counters are per server launch and summed over an arm's
	// launches (addHook): the interrupted run's launches count too.
	res.Hook = prior.prior.Hook
	for _, n := range notes {
		w := "resume: " + n
		res.Warnings = append(res.Warnings, w)
		fmt.Fprintf(warn, "warning: %s\n", w)
	}
	fmt.Fprintf(log, "resuming the run in %s: %d complete cells kept\n", opt.OutDir, len(prior.cells))
	return prior, nil
}

// closeRecords closes records.jsonl's sink and file (synced first) and
// returns runErr joined with what failed: a close error of the sink is the
// run's error when it had none; the file's first failure is kept as the
// sink's *FileError, naming how many whole records it holds.
func closeRecords(jsonl *recordsSink, recFile outFile, runErr error) error {
	if cerr := jsonl.Close(); cerr != nil && runErr == nil {
		runErr = fmt.Errorf("records: %w", cerr)
	}
	cerr := recFile.Sync()
	if err := recFile.Close(); cerr == nil {
		cerr = err
	}
	if jsonl.err == nil && cerr != nil {
		jsonl.err = &FileError{File: RecordsFile, Records: jsonl.Lines(), Err: cerr}
	}
	if jsonl.err != nil {
		runErr = errors.Join(runErr, jsonl.err)
	}
	return runErr
}

// recordsSink is records.jsonl's sink: its first failure is kept as a
// *FileError (how many whole records the file holds, and why no more). It
// is the run's first sink: the free text of each record (its error, as a
// server or the network wrote it) passes through the scrubber there, so
// the sinks after it (the cell's summary, OpenTelemetry export) get it
// scrubbed too.
type recordsSink struct {
	*loadgen.JSONLSink
	err   *FileError
	scrub *secret.Scrubber
}

func (s *recordsSink) Add(r *loadgen.Record) error {
	if r.Error != "" {
		r.Error = s.scrub.String(r.Error)
	}
	err := s.JSONLSink.Add(r)
	if err != nil && s.err == nil {
		s.err = &FileError{File: RecordsFile, Records: s.Lines(), Err: err}
	}
	return err
}

// schedules reads the config's trace (trace.first and trace.clamp_context
// applied) and builds each offered load's schedule (cellSchedule).
func (eff Config) schedules() (base traces.Schedule, scheds []traces.Schedule, err error) {
	base, err = traces.ReadFile(eff.TracePath(), traces.ReadOptions{Format: eff.Trace.Format, Lenient: eff.Trace.Lenient, Mapping: eff.Trace.Mapping, KeepFailed: eff.Trace.KeepFailed})
	if err != nil {
		// The file is the config's: name its field and line with the
		// reader's own message (which names the file).
		return base, nil, eff.errorf(eff.fieldError("trace.path", err))
	}
	if base, err = traces.Trim(base, eff.Trace.First, eff.Trace.ClampContext); err != nil {
		return base, nil, eff.errorf(eff.fieldError("trace.first", err))
	}
	scheds = make([]traces.Schedule, len(eff.Load.RatesRPS))
	for i, r := range eff.Load.RatesRPS {
		if scheds[i], err = cellSchedule(base, eff.Load, r, eff.Seed, i); err != nil {
			return base, nil, err
		}
	}
	return base, scheds, nil
}

// runner carries one run's state.
type runner struct {
	cfg  Config
	opt  Options
	log  io.Writer
	warn io.Writer // warning lines (Options.Warn)
	// base is the trace as read (transforms applied); scheds are the
	// offered loads' schedules built from it.
	base   traces.Schedule
	scheds []traces.Schedule
	res    *report.Results
	jsonl  loadgen.Sink
	cells  []measured
	otel   *telemetry.Exporter
	// launcher launches the reference and command servers; it keeps the
	// GPU's idle memory between arms.
	launcher *servers.Launcher
	// progress is the whole run's progress (runAll sets it).
	progress *runProgress
	// live holds the run's expanded secrets, TLS settings and scrubber.
	live *live
	// endpoints are the endpoint arms' servers as probed before the run,
	// keyed by URL (Config.armURL).
	endpoints map[string]servers.Target
	// model is the model id requests name on the server started last
	// (request.model, or the one its /v1/models lists).
	model string
	// kept holds the interrupted run's cells that Options.Resume keeps (nil
	// without it); cellsOut is CellsFile (nil when not written).
	kept     *kept
	cellsOut outFile
	// simStarts counts each arm's simulator starts (noise seeds, noiseSeed).
	simStarts map[string]int
	// stretch is, during the sweep, each arm's current stretch's ordinal
	// (beginStretch), and stretchPos the running cell's place in its
	// stretch (0: its first); simStartConfig seeds a start from them.
	stretch    map[string]int
	stretchPos int
}

// runAll runs the cells in report.RunOrder (repetitions, then loads, arms
// interleaved A B B A …), with the baseline's A/A replicate as the last arm
// unless resolution.aa_replicate is false. A started server is reused while consecutive cells
// belong to the same arm (a launched GPU server loads its model once per
// stretch), and shut down, with the GPU checked back to idle, before another
// arm's server starts.
func (r *runner) runAll(ctx context.Context) error {
	names, arms := r.runArms()
	order, err := report.RunOrder(names, r.cfg.Load.RatesRPS, r.cfg.Repetitions)
	if err != nil {
		return err
	}
	r.res.RunOrder = order
	stopProgress := r.startProgress(r.toRun(order))
	defer stopProgress()
	up := &armServer{r: r}
	defer up.close(ctx)
	prev := ""
	for i, k := range order {
		if k.Arm != prev {
			r.beginStretch(k.Arm)
			prev, r.stretchPos = k.Arm, 0
		} else {
			r.stretchPos++
		}
		key := cellKey{arm: k.Arm, load: loadIndex(r.cfg.Load.RatesRPS, k.OfferedLoadRPS), rep: k.Repetition}
		if r.kept != nil {
			if kc, ok := r.kept.cells[key]; ok {
				if err := r.keepCell(kc); err != nil {
					return err
				}
				continue
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("run stopped before cell %d/%d: %w", i+1, len(order), context.Cause(ctx))
		}
		if err := r.runOrdered(ctx, up, arms[k.Arm], i, len(order), k, key); err != nil {
			return err
		}
	}
	r.stretch = nil // the search's starts count on from the sweep's
	if ctx.Err() != nil {
		return fmt.Errorf("run stopped before the capacity search: %w", context.Cause(ctx))
	}
	if err := r.searchCapacity(ctx, func(arm ArmConfig) (servers.Server, error) { return up.use(ctx, arm) }); err != nil {
		return err
	}
	return up.close(ctx)
}

// runArms are the arms runAll interleaves, by name: the configured ones in
// their order, then the baseline's A/A replicate when resolution asks for it
// (the same server configuration under another arm name, report.AAArm).
func (r *runner) runArms() ([]string, map[string]ArmConfig) {
	names := make([]string, len(r.cfg.Arms))
	arms := map[string]ArmConfig{}
	for i, a := range r.cfg.Arms {
		names[i] = a.Name
		arms[a.Name] = a
	}
	if r.cfg.Extra.Resolution.aa() {
		aa := r.cfg.Arms[0]
		aa.Name = report.AAArm(aa.Name)
		names = append(names, aa.Name)
		arms[aa.Name] = aa
	}
	return names, arms
}

// toRun is order less the cells a resumed run keeps (all of order without
// Options.Resume); it counts them in the results' ResumedFrom.RerunCells.
func (r *runner) toRun(order []report.CellKey) []report.CellKey {
	if r.kept == nil {
		return order
	}
	var out []report.CellKey
	for _, k := range order {
		if _, ok := r.kept.cells[cellKey{arm: k.Arm, load: loadIndex(r.cfg.Load.RatesRPS, k.OfferedLoadRPS), rep: k.Repetition}]; !ok {
			out = append(out, k)
		}
	}
	r.res.ResumedFrom.RerunCells = len(out)
	return out
}

// runOrdered runs cell i of n (k, key) on arm's server: started if it is not
// the one up, the load's schedule replayed unmeasured first when
// load.warmup_replay asks and this server has not replayed it yet.
func (r *runner) runOrdered(ctx context.Context, up *armServer, arm ArmConfig, i, n int, k report.CellKey, key cellKey) error {
	srv, err := up.use(ctx, arm)
	if err != nil {
		return err
	}
	if r.cfg.Load.WarmupReplay && !up.replayed[key.load] {
		r.progress.begin(stepWarmup)
		if err := r.warmupReplay(ctx, srv, key); err != nil {
			return err
		}
		up.replayed[key.load] = true
	}
	r.res.Manifest.ArmOrder = append(r.res.Manifest.ArmOrder, k.Arm)
	r.progress.begin(stepCell)
	fmt.Fprintf(r.log, "[%d/%d] arm %s, offered load %g req/s, repetition %d: %d requests over %s; %s\n",
		i+1, n, k.Arm, k.OfferedLoadRPS, k.Repetition, len(r.scheds[key.load].Requests), r.scheds[key.load].Duration().Round(time.Millisecond), r.progress.status())
	if r.opt.BeforeCell != nil {
		if err := r.opt.BeforeCell(ctx, i, k); err != nil {
			return err
		}
	}
	return r.runCell(ctx, srv, key)
}

// armServer is the server up during runAll: reused while consecutive cells
// belong to its arm, shut down (its hook counters folded into the results
// first) before another arm's starts.
type armServer struct {
	r   *runner
	srv servers.Server
	arm string
	// replayed holds the loads whose schedule this server has replayed
	// unmeasured (load.warmup_replay).
	replayed map[int]bool
}

// close shuts the server down, if one is up, even after ctx ended.
func (s *armServer) close(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	s.r.addHook(s.srv.Hook(context.WithoutCancel(ctx)))
	err := s.srv.Close(context.WithoutCancel(ctx))
	s.srv = nil
	if err != nil {
		return fmt.Errorf("arm %s: shutting the server down: %w", s.arm, err)
	}
	return nil
}

// use returns arm's server: the one up when it is arm's, else a fresh
// start after the other arm's server is shut down.
func (s *armServer) use(ctx context.Context, arm ArmConfig) (servers.Server, error) {
	if s.srv != nil && s.arm == arm.Name {
		return s.srv, nil
	}
	if err := s.close(ctx); err != nil {
		return nil, err
	}
	s.r.progress.begin(stepStart)
	srv, err := s.r.startArm(ctx, arm)
	if err != nil {
		return nil, fmt.Errorf("arm %s: %w", arm.Name, err)
	}
	s.srv, s.arm = srv, arm.Name
	s.replayed = map[int]bool{}
	s.r.addServerInfo(ctx, arm.Name, srv)
	return srv, nil
}

// loadIndex finds rate's index in rates (RunOrder echoes the configured values).
func loadIndex(rates []float64, rate float64) int {
	for i, r := range rates {
		if r == rate {
			return i
		}
	}
	panic(fmt.Sprintf("experiment: offered load %g not in %v", rate, rates))
}

// addHook folds one server's hook counters into the results (an arm whose
// server was launched several times sums its counters).
func (r *runner) addHook(h *report.HookArm) {
	if h == nil {
		return
	}
	if r.res.Hook == nil {
		r.res.Hook = &report.HookSection{}
	}
	for i := range r.res.Hook.Arms {
		a := &r.res.Hook.Arms[i]
		if a.Arm == h.Arm {
			a.CallsEager += h.CallsEager
			a.CallsCapture += h.CallsCapture
			a.Receipts = append(a.Receipts, h.Receipts...)
			return
		}
	}
	r.res.Hook.Arms = append(r.res.Hook.Arms, *h)
}

// WarmupReplayRecord is one unmeasured warm-up replay (load.warmup_replay),
// kept in the results manifest under manifest.server.<arm>.warmup_replays.
type WarmupReplayRecord struct {
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	// BeforeRepetition is the repetition of the measured cell it preceded.
	BeforeRepetition int `json:"before_repetition"`
	// States counts the replay's requests by state; DurationS is its wall time (s).
	States    map[string]int `json:"states"`
	DurationS float64        `json:"duration_s"`
}

// warmupReplay replays the schedule of key's load once on srv, unmeasured:
// its records are dropped (never in records.jsonl or a cell). The server
// dying or the run ending stops it with an error.
func (r *runner) warmupReplay(ctx context.Context, srv servers.Server, key cellKey) error {
	sched := r.scheds[key.load]
	rate := r.cfg.Load.RatesRPS[key.load]
	fmt.Fprintf(r.log, "warm-up replay (unmeasured: its requests are not in %s nor in any cell) for arm %s at %g req/s: %d requests over %s\n",
		RecordsFile, key.arm, rate, len(sched.Requests), sched.Duration().Round(time.Millisecond))
	began := time.Now()
	cctx, stop := servers.UntilDied(ctx, srv.Died())
	defer stop()
	keep := &loadgen.SliceSink{}
	_, err := loadgen.Replay(cctx, srv, sched, loadgen.NewTracePacer(sched), keep, r.replayOptions(key.arm+" (warm-up replay)", rate, key.rep)...)
	select {
	case <-srv.Died():
		return fmt.Errorf("arm %s at %g req/s: the server died during the warm-up replay: %w", key.arm, rate, srv.Err())
	default:
	}
	if err != nil {
		return fmt.Errorf("arm %s at %g req/s: warm-up replay: %w", key.arm, rate, err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("arm %s at %g req/s: run stopped during the warm-up replay: %w", key.arm, rate, context.Cause(ctx))
	}
	rec := WarmupReplayRecord{OfferedLoadRPS: rate, BeforeRepetition: key.rep, States: replayStates(keep.Records), DurationS: time.Since(began).Seconds()}
	appendServerRecord(r, key.arm, "warmup_replays", rec)
	fmt.Fprintf(r.log, "warm-up replay for arm %s at %g req/s: %v in %s\n", key.arm, rate, rec.States, time.Since(began).Round(time.Millisecond))
	return nil
}

// coldStartWarning is the run's warning when measured cells follow a fresh
// launched server with no warm-up replay ("" otherwise).
func coldStartWarning(c Config) string {
	if (c.Server.Kind != servers.Reference && c.Server.Kind != servers.Command) || c.Load.WarmupReplay {
		return ""
	}
	return "load.warmup_replay is off on a launched server: the first measured cell after each server start also pays for the server's lazy warm-up (CUDA graphs captured per new batch shape, allocator growth). On the H200 reference server that made first cells' TTFT p50 ~160 ms against ~25 ms on a server that had seen the schedule, whatever the arm (results/h200-2026-11-29/README.md); A/B differences between cells in different positions are then not the arms' alone. Set load.warmup_replay: true."
}

// lockedWriter serialises writes to w under mu, shared by every writer
// that may reach the same destination.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
