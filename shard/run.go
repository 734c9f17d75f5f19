package shard

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/internal/outpath"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/traces"
)

// DefaultClockTolerance is the largest clock offset (plus its bound) a shard
// may have before it is flagged.
const DefaultClockTolerance = 10 * time.Millisecond

// DefaultClockExchanges is how many SNTP exchanges the minimum filter keeps one of.
const DefaultClockExchanges = 8

// Options are one shard's settings beyond the run's.
type Options struct {
	Spec Spec
	// StartAt is the shared absolute start of the first cell (required).
	StartAt time.Time
	// Gap is the timetable's time between one cell's last arrival and the
	// next cell's start (0: the config's request timeout).
	Gap time.Duration
	// ClockRef is the NTP server (host:port) clocks are measured against
	// ("" : not measured, offset taken as 0).
	ClockRef string
	// ClockTolerance flags a shard whose |offset| + bound exceeds it
	// (0: DefaultClockTolerance).
	ClockTolerance time.Duration
	// ClockExchanges is the SNTP exchanges made (0: DefaultClockExchanges).
	ClockExchanges int
	// Heartbeat is how often the running shard rewrites shard.json
	// (Manifest.Beats; 0: DefaultHeartbeat).
	Heartbeat time.Duration
}

// launchedKinds are the server kinds a run starts itself: each shard would
// start its own, so the shards would not share one system under test.
var launchedKinds = map[string]bool{servers.Sim: true, servers.Reference: true, servers.Command: true}

// Run replays shard so.Spec of cfg's run into opt.OutDir: experiment.Run with
// each schedule sliced (Spec.Slice) and each cell started on the shared
// timetable, then shard.json and hdr.log beside the run's files. The server
// must be one every shard reaches (not one each shard would launch). It
// returns what experiment.Run returns; shard.json is kept up to date after
// every cell, so a shard that is killed leaves a folder a merge names.
func Run(ctx context.Context, cfg *experiment.Config, opt experiment.Options, so Options) (*report.Results, error) {
	if err := CheckServer(cfg, so.Spec.Count); err != nil {
		return nil, err
	}
	return run(ctx, cfg, opt, so)
}

// CheckServer refuses a split over n > 1 shards of a config whose server
// each shard would launch for itself (sim, reference, command): the shards
// would then measure n servers at 1/n of the load, not one at the full load.
func CheckServer(cfg *experiment.Config, n int) error {
	if k := cfg.Effective().Server.Kind; n > 1 && launchedKinds[k] {
		return fmt.Errorf("server.kind %s launches a server in each shard, so %d shards would not drive one shared server; a split run needs a server every shard reaches (server.kind endpoint)", k, n)
	}
	return nil
}

// withDefaults checks so (a valid spec, a start) and fills what it leaves
// out: the gap (eff's request timeout), the clock tolerance, the heartbeat
// and the clock exchanges (their defaults).
func (so Options) withDefaults(eff experiment.Config) (Options, error) {
	if err := so.Spec.Validate(); err != nil {
		return so, err
	}
	if so.StartAt.IsZero() {
		return so, errors.New("--start-at: required with --shard (RFC 3339, the same on every shard)")
	}
	if so.Gap == 0 {
		so.Gap = eff.Request.Timeout
	}
	if so.Gap < 0 {
		return so, fmt.Errorf("--cell-gap %s: must be ≥ 0", so.Gap)
	}
	if so.ClockTolerance == 0 {
		so.ClockTolerance = DefaultClockTolerance
	}
	if so.Heartbeat <= 0 {
		so.Heartbeat = DefaultHeartbeat
	}
	if so.ClockExchanges == 0 {
		so.ClockExchanges = DefaultClockExchanges
	}
	return so, nil
}

// run is Run without the server check (tests drive the mechanics on
// private simulators).
func run(ctx context.Context, cfg *experiment.Config, opt experiment.Options, so Options) (*report.Results, error) {
	eff := cfg.Effective()
	so, err := so.withDefaults(eff)
	if err != nil {
		return nil, err
	}
	_, warn := opt.Writers()
	clock, err := MeasureClock(ctx, so.ClockRef, so.ClockExchanges, so.ClockTolerance)
	if err != nil {
		return nil, fmt.Errorf("--clock-ref: %w", err)
	}
	if clock.Flagged {
		fmt.Fprintf(warn, "warning: shard %s: clock offset %.3f ms ± %.3f ms against %s exceeds the tolerance of %g ms\n",
			so.Spec, clock.OffsetMs, clock.BoundMs, clock.Reference, clock.ToleranceMs)
	}
	dir, _ := filepath.Abs(filepath.Dir(opt.ConfigPath))
	man := &Manifest{
		Shard: so.Spec, StartAt: so.StartAt.UTC(), GapNs: so.Gap,
		ConfigPath: opt.ConfigPath, ConfigDir: dir, Config: string(opt.ConfigRaw), ConfigSHA256: sha256Hex(opt.ConfigRaw),
		Clock: clock, Cells: []CellStart{}, Measured: []experiment.CellMeasured{}, BeatEvery: so.Heartbeat,
	}
	tt := &Timetable{StartAt: so.StartAt, Gap: so.Gap}
	spans := map[float64]time.Duration{}
	var mu sync.Mutex // the hooks run on the run's goroutine; shard.json may be written from AfterCell
	var writeErr error
	opt.Slice = func(load int, s traces.Schedule) (traces.Schedule, error) {
		info := fingerprint(load, s)
		man.Schedules = append(man.Schedules, info)
		spans[eff.Load.RatesRPS[load]] = info.SpanNs
		return so.Spec.Slice(s)
	}
	beatCtx, stopBeats := context.WithCancel(ctx)
	beatsDone := make(chan struct{})
	beating := false
	opt.BeforeCell = func(ctx context.Context, order int, k report.CellKey) error {
		// Written before each cell's wait too (the output folder exists by
		// now), so a shard killed before its first cell ends leaves a
		// shard.json without the finished mark; from here on its heartbeat
		// rewrites it every so.Heartbeat.
		mu.Lock()
		err := man.write(opt.OutDir)
		start := !beating && err == nil
		beating = beating || start
		mu.Unlock()
		if err != nil {
			return err
		}
		if start {
			go func() {
				defer close(beatsDone)
				heartbeat(beatCtx, so.Heartbeat, func(now time.Time) {
					mu.Lock()
					defer mu.Unlock()
					man.Beats++
					man.BeatAt = now.UTC()
					if err := man.write(opt.OutDir); err != nil && writeErr == nil {
						writeErr = err
					}
				})
			}()
		}
		cs, err := tt.wait(ctx, order, spans[k.OfferedLoadRPS], clock.Offset())
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		man.Cells = append(man.Cells, cs)
		if cs.LateMs > clock.ToleranceMs {
			fmt.Fprintf(warn, "warning: shard %s: cell %d (arm %s, %g req/s, repetition %d) began %.1f ms after the shared timetable (raise --cell-gap)\n",
				so.Spec, order+1, k.Arm, k.OfferedLoadRPS, k.Repetition, cs.LateMs)
		}
		return nil
	}
	opt.AfterCell = func(m experiment.CellMeasured) {
		mu.Lock()
		defer mu.Unlock()
		man.Measured = append(man.Measured, m)
		if err := man.write(opt.OutDir); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	res, runErr := experiment.Run(ctx, cfg, opt)
	stopBeats()
	mu.Lock()
	started := beating
	mu.Unlock()
	if started {
		<-beatsDone
	}
	if res == nil {
		return nil, runErr
	}
	errs := []error{runErr, writeErr}
	if err := writeShardHDR(opt.OutDir, man, clock); err != nil {
		errs = append(errs, err)
	} else {
		opt.Written.Add(HDRLogFile)
	}
	man.Finished = true
	if !res.Complete {
		man.EndedEarly = "incomplete: " + report.OrText(res.IncompleteReason, "no reason recorded")
	}
	if err := man.write(opt.OutDir); err != nil {
		errs = append(errs, err)
	} else {
		opt.Written.Add(ManifestFile)
	}
	return res, errors.Join(errs...)
}

// heartbeat calls beat every period until ctx ends.
func heartbeat(ctx context.Context, period time.Duration, beat func(now time.Time)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			beat(now)
		}
	}
}

// writeShardHDR writes hdr.log from the shard's records.jsonl: one interval
// per measured cell, on the reference clock.
func writeShardHDR(dir string, man *Manifest, clock Clock) error {
	recs, err := loadgen.ReadRecordsFile(filepath.Join(dir, experiment.RecordsFile))
	if err != nil {
		return err
	}
	groups := groupRecords(recs)
	var cells []hdrCell
	for order, m := range man.Measured {
		h := loadgen.NewHistograms()
		key := cellID{m.Arm, m.Summary.OfferedLoad, m.Repetition}
		var end time.Duration
		for i := range groups[key] {
			_ = h.Add(&groups[key][i])
			end = max(end, groups[key][i].EndAt)
		}
		start := m.Summary.Start.Add(-clock.Offset())
		cells = append(cells, hdrCell{order: order, start: start, end: start.Add(end), hist: h})
	}
	f, err := outpath.Create(filepath.Join(dir, HDRLogFile))
	if err != nil {
		return fmt.Errorf("%s: %w", HDRLogFile, err)
	}
	err = writeHDRLog(f, man.StartAt, cells)
	return errors.Join(err, f.Close())
}
