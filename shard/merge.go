package shard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/internal/outpath"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// ShardsFile, in a merged folder, lists the shards merged and how their
// times were aligned.
const ShardsFile = "shards.json"

// MergeOptions are a merge's settings.
type MergeOptions struct {
	// OutDir receives records.jsonl, results.json, report.md, report.html,
	// hdr.log and shards.json.
	OutDir string
	// Command is the merge's command line (the merged manifest's command).
	Command []string
	// Log and Warn are as experiment.Options'.
	Log, Warn io.Writer
	// Written, when set, records the files the merge writes (experiment.Written).
	Written *experiment.Written
	// Wait, when > 0, is how long Merge first waits for every shard folder
	// to hold a finished shard.json (WaitFinished, polled every 2 s).
	Wait time.Duration
}

// shardDir is one shard folder as read.
type shardDir struct {
	dir  string
	man  Manifest
	res  report.Results
	recs map[cellID][]loadgen.Record
	hdr  map[string]*hdrhistogram.Histogram
}

// cellID names a cell inside records (arm, offered load, repetition).
type cellID struct {
	arm  string
	load float64
	rep  int
}

// MergedShard is one shard's line in shards.json.
type MergedShard struct {
	Dir   string      `json:"dir"`
	Shard Spec        `json:"shard"`
	Clock Clock       `json:"clock"`
	Cells []CellStart `json:"cells"`
	// ShiftMs[k] is how much later than the merged time zero (the earliest
	// shard's start) this shard started cell k (ms, on the reference clock):
	// added to every time of its records in that cell.
	ShiftMs []float64 `json:"shift_ms"`
}

// Merge reads the shard folders dirs (one per shard of one run, any order),
// checks that they belong together and cover every scheduled request
// exactly once, and writes the unsplit run's outputs into opt.OutDir through
// experiment.Rebuild. An OutDir that already holds a run is refused first;
// with opt.Wait it then waits for the shards to finish (WaitFinished). A
// missing, duplicated, unfinished or foreign shard is an error that names
// it, and nothing is written.
func Merge(ctx context.Context, dirs []string, opt MergeOptions) (*report.Results, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: no shard folders given")
	}
	if err := experiment.CheckOutNotLink(opt.OutDir); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	for _, f := range []string{experiment.ResultsFile, experiment.RecordsFile} {
		if _, err := os.Lstat(filepath.Join(opt.OutDir, f)); err == nil {
			return nil, fmt.Errorf("output folder %s already holds a run (%s): choose another", opt.OutDir, f)
		}
	}
	if opt.Wait > 0 {
		if err := WaitFinished(ctx, dirs, opt.Wait, 2*time.Second); err != nil {
			return nil, err
		}
	}
	shards, err := readShards(dirs)
	if err != nil {
		return nil, err
	}
	first := shards[0]
	cfg, err := experiment.Parse(strings.NewReader(first.man.Config), first.man.ConfigPath, first.man.ConfigDir)
	if err != nil {
		return nil, fmt.Errorf("merge: the shards' config (%s): %w", first.man.ConfigPath, err)
	}
	warnings, listed := shardWarnings(shards)
	var (
		rates  = cfg.Effective().Load.RatesRPS
		cells  []experiment.RebuildCell
		hcells []hdrCell
	)
	for k, key := range first.res.RunOrder {
		li := slices.Index(rates, key.OfferedLoadRPS)
		if li < 0 {
			return nil, fmt.Errorf("merge: cell %d: offered load %g req/s is not in the config", k+1, key.OfferedLoadRPS)
		}
		mc, zero, warn := mergeCell(k, key, shards, listed)
		if warn != "" {
			warnings = append(warnings, warn)
		}
		if err := checkCoverage(k, key, shards, first.man.Schedules[li], mc.Records); err != nil {
			return nil, err
		}
		slices.SortFunc(mc.Records, func(a, b loadgen.Record) int { return a.RequestID - b.RequestID })
		cells = append(cells, mc)
		hc, err := mergeHDR(k, shards, mc.Records, zero)
		if err != nil {
			return nil, err
		}
		hcells = append(hcells, hc)
	}

	head := first.res
	head.Manifest.Command = opt.Command
	head.CreatedAt = time.Now().UTC()
	head.RunID = rand.Text() // a new run: its shards' runs are not it
	head.Warnings = warnings
	head.Complete, head.IncompleteReason = true, "" // readShard refuses incomplete shards
	res, err := experiment.Rebuild(cfg, experiment.Options{
		ConfigPath: first.man.ConfigPath, ConfigRaw: []byte(first.man.Config), OutDir: opt.OutDir,
		Command: opt.Command, Log: opt.Log, Warn: opt.Warn, Written: opt.Written,
	}, head, cells)
	if err != nil {
		return res, err
	}
	return res, writeMerged(opt.OutDir, first.man.StartAt, hcells, listed, opt.Written)
}

// readShards reads dirs (readShard), checks that they are the shards of one
// run (checkTogether) and returns them in shard order.
func readShards(dirs []string) ([]*shardDir, error) {
	shards := make([]*shardDir, 0, len(dirs))
	for _, d := range dirs {
		s, err := readShard(d)
		if err != nil {
			return nil, err
		}
		shards = append(shards, s)
	}
	if err := checkTogether(shards); err != nil {
		return nil, err
	}
	slices.SortFunc(shards, func(a, b *shardDir) int { return a.man.Shard.Index - b.man.Shard.Index })
	return shards, nil
}

// shardWarnings are the merged run's warnings about its shards as a whole
// (code not proved the same, clocks over the tolerance or unmeasured across
// hosts), and each shard's line of shards.json without its shifts.
func shardWarnings(shards []*shardDir) (warnings []string, listed []MergedShard) {
	first := shards[0]
	// checkTogether compared the shards' commits; an unknown or dirty one
	// (a binary built without version control information, or from changed
	// files) compares equal without proving the code was the same.
	if c := first.res.Manifest.GitCommit; c == "" || strings.HasSuffix(c, "-dirty") {
		if c == "" {
			c = "unknown"
		}
		warnings = append(warnings, fmt.Sprintf("the shards' code commit is %s: the merge cannot prove that every shard ran the same code", c))
	}
	listed = make([]MergedShard, len(shards))
	var unmeasured []string
	hosts := map[string]bool{}
	for i, s := range shards {
		listed[i] = MergedShard{Dir: s.dir, Shard: s.man.Shard, Clock: s.man.Clock, Cells: s.man.Cells}
		if s.man.Clock.Flagged {
			warnings = append(warnings, fmt.Sprintf("shard %s (%s): clock offset %.3f ms ± %.3f ms against %s exceeds the tolerance of %g ms: its times are uncertain by that much",
				s.man.Shard, s.dir, s.man.Clock.OffsetMs, s.man.Clock.BoundMs, s.man.Clock.Reference, s.man.Clock.ToleranceMs))
		}
		if s.man.Clock.NotMeasured != "" {
			unmeasured = append(unmeasured, s.man.Shard.String())
		}
		hosts[s.res.Manifest.Machine] = true
	}
	// Shards on one host share its clock; on several, each started its
	// cells by its own clock, so without a reference their alignment (and
	// the start spread checked by mergeCell) is only as good as the hosts' sync.
	if len(hosts) > 1 && len(unmeasured) > 0 {
		warnings = append(warnings, fmt.Sprintf("shards %s ran on %d hosts without a clock reference (--clock-ref): their clock offsets are unmeasured, so how far apart they offered each cell is unknown",
			strings.Join(unmeasured, ", "), len(hosts)))
	}
	return warnings, listed
}

// mergeCell joins the shards' cell k (key) into one: their records shifted
// onto the merged time zero (the earliest shard start, on the reference
// clock; each shard's shift appended to its line in listed) and their
// summaries added up. warn is set when the shards started the cell further
// apart than the clock tolerance.
func mergeCell(k int, key report.CellKey, shards []*shardDir, listed []MergedShard) (mc experiment.RebuildCell, zero time.Time, warn string) {
	first := shards[0]
	id := cellID{key.Arm, key.OfferedLoadRPS, key.Repetition}
	for _, s := range shards {
		if st := s.start(k); zero.IsZero() || st.Before(zero) {
			zero = st
		}
	}
	var spread time.Duration
	for _, s := range shards {
		spread = max(spread, s.start(k).Sub(zero))
	}
	if tol := time.Duration(first.man.Clock.ToleranceMs * float64(time.Millisecond)); spread > tol {
		warn = fmt.Sprintf("cell %d (arm %s, %g req/s, repetition %d): the shards started %.1f ms apart (over the %g ms tolerance; shards.json has each shift): the merged schedule's requests were offered up to that much off their shared timetable",
			k+1, key.Arm, key.OfferedLoadRPS, key.Repetition, ms(spread), first.man.Clock.ToleranceMs)
	}
	mc = experiment.RebuildCell{CellMeasured: first.man.Measured[k]}
	sum := &mc.Summary
	sum.Start, sum.Scheduled, sum.Sent, sum.States = zero, 0, 0, map[loadgen.State]int{}
	sum.WindowStart, sum.WindowEnd = 0, 0
	for i, s := range shards {
		m := s.man.Measured[k]
		shift := s.start(k).Sub(zero)
		listed[i].ShiftMs = append(listed[i].ShiftMs, ms(shift))
		for _, r := range s.recs[id] {
			mc.Records = append(mc.Records, shifted(r, shift))
		}
		sum.Scheduled += m.Summary.Scheduled
		sum.Sent += m.Summary.Sent
		for st, n := range m.Summary.States {
			sum.States[st] += n
		}
		if m.Summary.WindowEnd > m.Summary.WindowStart {
			ws, we := m.Summary.WindowStart+shift, m.Summary.WindowEnd+shift
			if sum.WindowEnd == sum.WindowStart || ws < sum.WindowStart {
				sum.WindowStart = ws
			}
			sum.WindowEnd = max(sum.WindowEnd, we)
		}
	}
	sum.Complete, sum.IncompleteReason = true, ""
	return mc, zero, warn
}

// mergeHDR merges the shards' HDR histograms of cell k tag by tag, nothing
// dropped, and checks their counts against the merged records' own; the
// cell's hdr.log interval starts at zero and ends at its last record's end.
func mergeHDR(k int, shards []*shardDir, recs []loadgen.Record, zero time.Time) (hdrCell, error) {
	first := shards[0]
	own := loadgen.NewHistograms()
	var end time.Duration
	for i := range recs {
		_ = own.Add(&recs[i])
		end = max(end, recs[i].EndAt)
	}
	hist := loadgen.NewHistograms()
	for _, m := range hdrMetrics {
		tag := hdrTag(k, m)
		var total int64
		var h *hdrhistogram.Histogram
		for _, s := range shards {
			sh, ok := s.hdr[tag]
			if !ok {
				return hdrCell{}, fmt.Errorf("merge: shard %s (%s): %s has no interval %s", s.man.Shard, s.dir, HDRLogFile, tag)
			}
			total += sh.TotalCount()
			if h == nil {
				h = hdrhistogram.New(sh.LowestTrackableValue(), sh.HighestTrackableValue(), int(sh.SignificantFigures()))
			}
			if sh.LowestTrackableValue() != h.LowestTrackableValue() || sh.HighestTrackableValue() != h.HighestTrackableValue() || sh.SignificantFigures() != h.SignificantFigures() {
				return hdrCell{}, fmt.Errorf("merge: shard %s (%s): %s interval %s has range %d..%d at %d digits, shard %s's %d..%d at %d: not the same histograms",
					s.man.Shard, s.dir, HDRLogFile, tag, sh.LowestTrackableValue(), sh.HighestTrackableValue(), sh.SignificantFigures(),
					first.man.Shard, h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures())
			}
			if dropped := h.Merge(sh); dropped != 0 {
				return hdrCell{}, fmt.Errorf("merge: %s: merging shard %s's histogram dropped %d values", tag, s.man.Shard, dropped)
			}
		}
		if h.TotalCount() != total {
			return hdrCell{}, fmt.Errorf("merge: %s: merged histogram holds %d values, the shards %d", tag, h.TotalCount(), total)
		}
		if n := histOf(own, m).TotalCount(); n != total {
			return hdrCell{}, fmt.Errorf("merge: %s: the shards' histograms hold %d values, their records %d", tag, total, n)
		}
		*histOf(hist, m) = *h
	}
	return hdrCell{order: k, start: zero, end: zero.Add(end), hist: hist}, nil
}

// writeMerged writes the merged hdr.log (intervals from base) and shards.json
// into dir, recording each in written once written whole.
func writeMerged(dir string, base time.Time, hcells []hdrCell, listed []MergedShard, written *experiment.Written) error {
	f, err := outpath.Create(filepath.Join(dir, HDRLogFile))
	if err != nil {
		return fmt.Errorf("%s: %w", HDRLogFile, err)
	}
	if err := errors.Join(writeHDRLog(f, base, hcells), f.Close()); err != nil {
		return err
	}
	written.Add(HDRLogFile)
	b, err := json.MarshalIndent(listed, "", "  ")
	if err != nil {
		return err
	}
	if err := outpath.WriteFile(filepath.Join(dir, ShardsFile), append(b, '\n')); err != nil {
		return err
	}
	written.Add(ShardsFile)
	return nil
}

// start is when s started cell k, on the reference clock.
func (s *shardDir) start(k int) time.Time {
	return s.man.Measured[k].Summary.Start.Add(-s.man.Clock.Offset())
}

// shifted is r moved d later as a whole, scheduled time included: a shard's
// records keep what its own client measured (latencies and its dispatch lag
// are unchanged), and its misalignment with the other shards is reported
// apart (MergedShard.ShiftMs, a warning past the tolerance).
func shifted(r loadgen.Record, d time.Duration) loadgen.Record {
	r.ScheduledAt += d
	if r.State != loadgen.StateNotSent {
		r.SentAt += d
	}
	for _, p := range []*time.Duration{&r.DispatchedAt, &r.FirstMessageAt, &r.EndAt} {
		if *p != 0 {
			*p += d
		}
	}
	r.Events = slices.Clone(r.Events)
	for i := range r.Events {
		r.Events[i].At += d
	}
	return r
}

// readShard reads one shard folder; anything missing is an error naming it.
func readShard(dir string) (*shardDir, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("merge: shard folder %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("merge: shard folder %s: not a folder", dir)
	}
	s := &shardDir{dir: dir}
	if s.man, err = readManifest(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("merge: shard folder %s: no %s: not the output of `transferlab run --shard`", dir, ManifestFile)
		}
		return nil, fmt.Errorf("merge: shard folder %s: %w", dir, err)
	}
	if !s.man.Finished {
		beat := ""
		if !s.man.BeatAt.IsZero() {
			beat = fmt.Sprintf("; its last heartbeat (every %s) was at %s by its clock, %s before this machine's now: a shard beating no more was killed outright (SIGKILL, out of memory, its node lost)",
				s.man.BeatEvery, s.man.BeatAt.UTC().Format(time.RFC3339), time.Since(s.man.BeatAt).Round(time.Second))
		}
		return nil, fmt.Errorf("merge: shard %s (%s) did not finish: it was killed or is still running (%s has no finished mark; %d of its cells were recorded%s)",
			s.man.Shard, dir, ManifestFile, len(s.man.Measured), beat)
	}
	if s.res, err = report.ReadResults(filepath.Join(dir, experiment.ResultsFile)); err != nil {
		return nil, fmt.Errorf("merge: shard %s (%s): %w", s.man.Shard, dir, err)
	}
	if !s.res.Complete {
		return nil, fmt.Errorf("merge: shard %s (%s) did not complete: %s", s.man.Shard, dir, orUnknown(s.res.IncompleteReason))
	}
	if len(s.man.Measured) != len(s.res.RunOrder) {
		return nil, fmt.Errorf("merge: shard %s (%s) measured %d of the run's %d cells: %s", s.man.Shard, dir, len(s.man.Measured), len(s.res.RunOrder), orUnknown(s.res.IncompleteReason))
	}
	recs, err := loadgen.ReadRecordsFile(filepath.Join(dir, experiment.RecordsFile))
	if err != nil {
		return nil, fmt.Errorf("merge: shard %s (%s): %w", s.man.Shard, dir, err)
	}
	s.recs = groupRecords(recs)
	f, err := os.Open(filepath.Join(dir, HDRLogFile))
	if err != nil {
		return nil, fmt.Errorf("merge: shard %s (%s): %w", s.man.Shard, dir, err)
	}
	defer f.Close()
	if s.hdr, err = readHDRLog(f); err != nil {
		return nil, fmt.Errorf("merge: shard %s (%s): %s: %w", s.man.Shard, dir, HDRLogFile, err)
	}
	return s, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason recorded"
	}
	return s
}

// checkTogether refuses shards that are not the N shards of one run.
func checkTogether(shards []*shardDir) error {
	a := shards[0]
	n := a.man.Shard.Count
	byIndex := map[int]string{}
	for _, s := range shards {
		if prev, dup := byIndex[s.man.Shard.Index]; dup {
			return fmt.Errorf("merge: shard %s appears twice: %s and %s", s.man.Shard, prev, s.dir)
		}
		byIndex[s.man.Shard.Index] = s.dir
		diff := func(what, x, y string) error {
			return fmt.Errorf("merge: shard folder %s is not from the same run as %s: %s %s there, %s here", s.dir, a.dir, what, x, y)
		}
		switch {
		case s.man.Shard.Count != n:
			return diff("shard count", fmt.Sprint(n), fmt.Sprint(s.man.Shard.Count))
		case s.man.ConfigSHA256 != a.man.ConfigSHA256:
			return diff("config (sha256)", short(a.man.ConfigSHA256), short(s.man.ConfigSHA256))
		case s.res.Trace.SHA256 != a.res.Trace.SHA256:
			return diff("trace (sha256)", short(a.res.Trace.SHA256), short(s.res.Trace.SHA256))
		case s.res.Manifest.Seed != a.res.Manifest.Seed:
			return diff("seed", fmt.Sprint(a.res.Manifest.Seed), fmt.Sprint(s.res.Manifest.Seed))
		case s.res.Manifest.GitCommit != a.res.Manifest.GitCommit:
			return diff("code (commit)", orUnknown(a.res.Manifest.GitCommit), orUnknown(s.res.Manifest.GitCommit))
		case !s.man.StartAt.Equal(a.man.StartAt):
			return diff("--start-at", a.man.StartAt.Format(time.RFC3339Nano), s.man.StartAt.Format(time.RFC3339Nano))
		case s.man.GapNs != a.man.GapNs:
			return diff("--cell-gap", a.man.GapNs.String(), s.man.GapNs.String())
		case !slices.Equal(s.res.RunOrder, a.res.RunOrder):
			return diff("arm/repetition order", fmt.Sprint(a.res.RunOrder), fmt.Sprint(s.res.RunOrder))
		case !sameSchedules(s.man.Schedules, a.man.Schedules):
			return diff("schedules (sha256 of ids, offsets and lengths)", fmt.Sprint(scheduleHashes(a.man.Schedules)), fmt.Sprint(scheduleHashes(s.man.Schedules)))
		}
	}
	var missing []string
	for i := range n {
		if _, ok := byIndex[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("merge: shard %s missing: %d of %d shard folders given", strings.Join(missing, ", "), len(shards), n)
	}
	return nil
}

func sameSchedules(a, b []ScheduleInfo) bool {
	return slices.Equal(scheduleHashes(a), scheduleHashes(b))
}

func scheduleHashes(s []ScheduleInfo) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = short(x.SHA256)
	}
	return out
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// checkCoverage checks that recs (the merged records of cell k) hold every
// request of the unsplit schedule exactly once, and each in its own shard.
func checkCoverage(k int, key report.CellKey, shards []*shardDir, sched ScheduleInfo, recs []loadgen.Record) error {
	n := shards[0].man.Shard.Count
	pos := make(map[int]int, len(sched.IDs)) // id → index in the unsplit schedule
	for i, id := range sched.IDs {
		pos[id] = i
	}
	seen := make(map[int]int, len(recs))
	for _, r := range recs {
		if _, ok := pos[r.RequestID]; !ok {
			return fmt.Errorf("merge: cell %d (arm %s, %g req/s, repetition %d): request id %d is not in the schedule", k+1, key.Arm, key.OfferedLoadRPS, key.Repetition, r.RequestID)
		}
		seen[r.RequestID]++
	}
	missing := map[int]int{} // shard index → requests missing
	var dup []int
	for _, id := range sched.IDs {
		switch seen[id] {
		case 0:
			missing[pos[id]%n]++
		case 1:
		default:
			dup = append(dup, id)
		}
	}
	where := fmt.Sprintf("merge: cell %d (arm %s, %g req/s, repetition %d)", k+1, key.Arm, key.OfferedLoadRPS, key.Repetition)
	if len(dup) > 0 {
		return fmt.Errorf("%s: %d requests recorded more than once (ids %v…)", where, len(dup), dup[:min(len(dup), 5)])
	}
	if len(missing) > 0 {
		var parts []string
		for i := range n {
			if missing[i] > 0 {
				parts = append(parts, fmt.Sprintf("%d from shard %d/%d (%s)", missing[i], i, n, shards[i].dir))
			}
		}
		return fmt.Errorf("%s: scheduled requests missing: %s", where, strings.Join(parts, ", "))
	}
	return nil
}

// groupRecords groups records by cell.
func groupRecords(recs []loadgen.Record) map[cellID][]loadgen.Record {
	out := map[cellID][]loadgen.Record{}
	for _, r := range recs {
		k := cellID{r.Arm, r.OfferedLoad, r.Repetition}
		out[k] = append(out[k], r)
	}
	return out
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// WaitFinished polls dirs every poll until each holds a finished shard.json,
// one of them says its shard ended early (Manifest.EndedEarly: the merge
// needs every shard, so waiting for the others is pointless), one that has
// begun beating stops (its Beats unchanged for StaleBeats × its BeatEvery,
// timed on this machine's clock: a shard killed outright writes no mark),
// ctx ends, or wait passes; it returns nil in every case (Merge then names
// any shard unfinished or ended early), except for ctx's cancellation.
func WaitFinished(ctx context.Context, dirs []string, wait, poll time.Duration) error {
	deadline := time.Now().Add(wait)
	type seen struct {
		beats int
		at    time.Time
	}
	last := make([]seen, len(dirs))
	for {
		done, ended := true, false
		now := time.Now()
		for i, d := range dirs {
			m, err := readManifest(d)
			done = done && err == nil && m.Finished
			ended = ended || (err == nil && m.EndedEarly != "")
			if err != nil || m.Finished || m.Beats == 0 || m.BeatEvery <= 0 {
				continue
			}
			if m.Beats != last[i].beats || last[i].at.IsZero() {
				last[i] = seen{m.Beats, now}
			} else if now.Sub(last[i].at) > StaleBeats*m.BeatEvery {
				ended = true // its heartbeat stopped: killed
			}
		}
		if done || ended || time.Now().After(deadline) {
			return nil
		}
		t := time.NewTimer(min(poll, time.Until(deadline)+time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}
