package analysis

import (
	"slices"
	"time"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"

	"github.com/transferlab/transferlab/loadgen"
)

// NoMeasuredRequestSent is Cell.NotMeasured when no measured (non-warm-up)
// request was sent, so the cell has no window, throughput, goodput or
// arrival rate.
const NoMeasuredRequestSent = "no measured request was sent"

// Defaults of CellOptions.
const (
	// DefaultCDFPoints is how many points of the TTFT and ITL CDFs a Cell keeps for plots.
	DefaultCDFPoints = 200
	// DefaultClientBoundLag is the p99 dispatch lag above which a
	// Cell is flagged ClientBound: the client, not the server, set the pace.
	// It is loadgen's lag budget, so a live run and a re-report agree.
	DefaultClientBoundLag = loadgen.DefaultLagBudget
)

// CellOptions says which cell the records belong to and how to summarise them.
// Zero values take the stated defaults.
type CellOptions struct {
	Arm            string
	OfferedLoadRPS float64
	Repetition     int
	// Order is the cell's position in the interleaved run order (RunOrder).
	Order       int
	RecordsFile string
	// SLO is what goodput is measured against; undeclared (zero) targets are ignored.
	SLO report.SLO
	// Confidence is the one-sided level of percentile claims (default DefaultConfidence).
	Confidence float64
	// CDFPoints is how many CDF points TTFT and ITL keep (default DefaultCDFPoints; <0: none).
	CDFPoints int
	// ClientBoundLag is the dispatch-lag budget of ClientBound (default
	// DefaultClientBoundLag = loadgen.DefaultLagBudget, 1 ms).
	ClientBoundLag time.Duration
}

func (o CellOptions) withDefaults() CellOptions {
	if o.Confidence == 0 {
		o.Confidence = stats.DefaultConfidence
	}
	if o.CDFPoints == 0 {
		o.CDFPoints = DefaultCDFPoints
	}
	if o.CDFPoints < 0 {
		o.CDFPoints = 0
	}
	if o.ClientBoundLag == 0 {
		o.ClientBoundLag = DefaultClientBoundLag
	}
	return o
}

// BuildCell summarises the raw records of one arm × offered load × repetition
// with DESIGN.md's metric definitions:
//   - warm-up records are counted in WarmupRecords and left out of everything
//     else but WindowOutputTokens (their token events inside the window);
//   - every State key is present in States (zeros included) and the counts sum
//     to the measured records;
//   - latency distributions (TTFT, TTFT intended, TTFO, ITL per gap, TPOT for
//     output ≥ 2, E2E) are over requests that ended ok; schedule lag is over
//     loadgen.ScheduleLagSample (every measured request that was sent: the
//     samples of Replay's Summary.ScheduleLagP99, so the p99 is the same);
//     dispatch lag over loadgen.ClientLag;
//   - the window, WindowOutputTokens and ThroughputTokPerS are loadgen.Window
//     (the one definition, also Replay's Summary): from the first measured
//     send to the last event of any measured request, counting token events
//     inside it (warm-up stragglers included); WindowS is its length in s;
//   - when no measured request was sent, NotMeasured is
//     NoMeasuredRequestSent and WindowS, ThroughputTokPerS, GoodputRPS and
//     ArrivalRateRPS are nil (not 0: nothing was measured);
//   - GoodputRPS = ArrivalRateRPS × GoodRequests / measured requests, where
//     GoodRequests are the ok requests ending inside the window that meet
//     every declared SLO (a TPOT target does not apply to a one-token
//     output, which has no TPOT): the arrival rate when every request met
//     the SLOs, never above it; nil with no arrival rate;
//   - OutputTokens, output-token source counts, usage mismatches and
//     MissingUsage are over ok requests; QueuedByCap and PromptMismatches over
//     sent ones;
//   - ClientBound, DispatchLateSends and DispatchLagP99ForFlagMs are
//     loadgen.ClientBoundFlag of the samples, published or not, and
//     opts.ClientBoundLag: more than 1 % of the sends late at 99 % confidence;
//   - SLOClaims test each declared target by early stopping (EarlyStopping);
//   - percentiles the sample size cannot support are refused (BuildDist);
//   - Requests keeps each ok measured request's TTFT, TPOT and E2E (ms) by
//     request ID, for per-request comparisons between arms (requestRatio);
//   - FirstError describes the earliest-scheduled measured request that did
//     not end ok (FailureWarning quotes it).
func BuildCell(recs []loadgen.Record, opts CellOptions) report.Cell {
	opts = opts.withDefaults()
	c := report.Cell{
		Arm:               opts.Arm,
		OfferedLoadRPS:    opts.OfferedLoadRPS,
		Repetition:        opts.Repetition,
		Order:             opts.Order,
		RecordsFile:       opts.RecordsFile,
		States:            make(map[string]int, len(loadgen.States)),
		UsageSourceCounts: map[string]int{},
	}
	for _, s := range loadgen.States {
		c.States[string(s)] = 0
	}
	var s cellSamples
	measured := s.addMeasured(&c, recs)
	c.FirstError = firstError(measured)
	win := loadgen.Window(recs)
	setWindow(&c, win)
	claims := newClaimCounter(opts.SLO)
	c.GoodRequests = s.addEnded(&c, measured, win, opts.SLO, claims)
	if win.Measured {
		c.ArrivalRateRPS = arrivalRate(measured)
	}
	if c.ArrivalRateRPS != nil && len(measured) > 0 {
		c.GoodputRPS = ptr(*c.ArrivalRateRPS * float64(c.GoodRequests) / float64(len(measured)))
	}
	s.setDists(&c, opts)
	c.SLOClaims = claims.claims(opts.Confidence)

	// The flag is a warning, not a tail claim: loadgen computes it (the same
	// figures its Summary carries: late sends tested at 99 %, the p99 shown
	// even where DispatchLag refuses to publish one for want of samples).
	if len(s.clientLags) > 0 {
		p99, late, bound := loadgen.ClientBoundFlag(s.clientLags, opts.ClientBoundLag)
		c.DispatchLagP99ForFlagMs, c.DispatchLateSends, c.ClientBound = ms(p99), late, bound
	}
	return c
}

// cellSamples are one cell's per-request samples (ms) of each distribution
// BuildCell publishes, and the client lags its client-bound flag tests.
type cellSamples struct {
	ttft, ttftInt, ttfo, itl, tpot, e2e, lag, dispatch []float64
	clientLags                                         []time.Duration
}

// addMeasured counts recs into c (warm-up records, states, requests queued
// by the cap, the prompt check) and takes the schedule and dispatch lags of
// every measured request; it returns the measured (non-warm-up) records.
func (s *cellSamples) addMeasured(c *report.Cell, recs []loadgen.Record) []*loadgen.Record {
	var prompts promptChecker
	measured := make([]*loadgen.Record, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			c.WarmupRecords++
			continue
		}
		measured = append(measured, r)
		c.States[string(r.State)]++
		if d, ok := loadgen.ScheduleLagSample(r); ok {
			s.lag = append(s.lag, ms(d))
		}
		if d, ok := loadgen.ClientLag(r); ok {
			s.dispatch = append(s.dispatch, ms(d))
			s.clientLags = append(s.clientLags, d)
		}
		if r.QueuedByCap {
			c.QueuedByCap++
		}
		prompts.add(r)
	}
	c.PromptCheck = prompts.check()
	c.PromptMismatches = c.PromptCheck.Mismatches
	return measured
}

// setWindow sets c's window figures from win (loadgen.Window), or marks the
// cell NoMeasuredRequestSent.
func setWindow(c *report.Cell, win loadgen.WindowFigures) {
	c.WindowOutputTokens = win.OutputTokens
	windowS := win.Length().Seconds()
	if win.Measured {
		c.WindowS = &windowS
		if windowS > 0 {
			c.ThroughputTokPerS = ptr(win.ThroughputTokPerS)
		}
	} else {
		c.NotMeasured = NoMeasuredRequestSent
	}
}

// addEnded counts the measured requests' tokens into c, takes the latency
// samples and per-request figures of those that ended ok, feeds claims, and
// returns how many of them ended inside win meeting every target of slo.
func (s *cellSamples) addEnded(c *report.Cell, measured []*loadgen.Record, win loadgen.WindowFigures, slo report.SLO, claims *claimCounter) (good int) {
	for _, r := range measured {
		c.InputTokens += r.InputTokens
		c.MultiTokenEvents += r.MultiTokenEvents()
		if r.State != loadgen.StateOK {
			claims.failed(r.State)
			continue
		}
		c.OutputTokens += r.OutputTokens
		if r.OutputTokensSource != "" {
			c.UsageSourceCounts[r.OutputTokensSource]++
		}
		if r.UsageMismatch {
			c.UsageMismatches++
		}
		if r.MissingUsage() {
			c.MissingUsage++
		}
		m := measure(r)
		claims.add(m)
		s.add(m)
		c.Requests = append(c.Requests, requestFigures(r.RequestID, m))
		inWindow := win.Measured && r.EndAt > 0 && r.EndAt >= win.Start && r.EndAt <= win.End
		if inWindow && meetsSLO(m, slo) {
			good++
		}
	}
	return good
}

// add takes the latency samples of one request that ended ok.
func (s *cellSamples) add(m requestMetrics) {
	if m.ttftOK {
		s.ttft = append(s.ttft, ms(m.ttft))
		s.ttftInt = append(s.ttftInt, ms(m.ttftIntended))
	}
	if m.ttfoOK {
		s.ttfo = append(s.ttfo, ms(m.ttfo))
	}
	for _, g := range m.itls {
		s.itl = append(s.itl, ms(g))
	}
	if m.tpotOK {
		s.tpot = append(s.tpot, ms(m.tpot))
	}
	if m.e2eOK {
		s.e2e = append(s.e2e, ms(m.e2e))
	}
}

// setDists builds c's distributions from the samples (BuildDist; CDF points
// for TTFT and ITL only).
func (s *cellSamples) setDists(c *report.Cell, opts CellOptions) {
	conf := opts.Confidence
	c.TTFT = BuildDist(s.ttft, conf, opts.CDFPoints)
	c.TTFTIntended = BuildDist(s.ttftInt, conf, 0)
	c.TTFO = BuildDist(s.ttfo, conf, 0)
	c.ITL = BuildDist(s.itl, conf, opts.CDFPoints)
	c.TPOT = BuildDist(s.tpot, conf, 0)
	c.E2E = BuildDist(s.e2e, conf, 0)
	c.ScheduleLag = BuildDist(s.lag, conf, 0)
	c.DispatchLag = BuildDist(s.dispatch, conf, 0)
}

// requestFigures is one request's per-request figures (ms; nil where undefined).
func requestFigures(id int, m requestMetrics) report.RequestFigures {
	f := report.RequestFigures{ID: id}
	if m.ttftOK {
		f.TTFTMs = ptr(ms(m.ttft))
	}
	if m.tpotOK {
		f.TPOTMs = ptr(ms(m.tpot))
	}
	if m.e2eOK {
		f.E2EMs = ptr(ms(m.e2e))
	}
	return f
}

// meetsSLO reports whether one completed request meets every declared target
// of slo; undeclared (zero) targets and undefined metrics do not decide.
func meetsSLO(m requestMetrics, slo report.SLO) bool {
	if slo.TTFTMs > 0 && (!m.ttftOK || ms(m.ttft) > slo.TTFTMs) {
		return false
	}
	if slo.TPOTMs > 0 && m.tpotOK && ms(m.tpot) > slo.TPOTMs {
		return false
	}
	if slo.E2EMs > 0 && (!m.e2eOK || ms(m.e2e) > slo.E2EMs) {
		return false
	}
	return true
}

// RecordOver lists the metrics of slo's declared targets ("ttft", "tpot",
// "e2e") that one ended request counts over, as Cell.SLOClaims counts it: a
// sent request that failed is over every target; a cancelled or unsent one,
// and a metric it does not define, count nowhere.
func RecordOver(r *loadgen.Record, slo report.SLO) []string {
	cc := newClaimCounter(slo)
	if r.State != loadgen.StateOK {
		cc.failed(r.State)
	} else {
		cc.add(measure(r))
	}
	var out []string
	for i, t := range cc.targets {
		if cc.over[i] > 0 {
			out = append(out, t.metric)
		}
	}
	return out
}

// claimCounter counts, per declared SLO target, the samples and those over target.
type claimCounter struct {
	quantile float64
	targets  []struct {
		metric string
		ms     float64
	}
	n, over []int
	// margin loosens every target (LooseAttainment): TTFT and E2E by
	// margin, TPOT by margin / (output tokens − 1); 0 for the SLO's own.
	margin time.Duration
}

func newClaimCounter(s report.SLO) *claimCounter {
	p := s.Percentile
	if p == 0 {
		p = report.DefaultSLOPercentile
	}
	_, q, err := percentileName(p)
	if err != nil {
		q = p / 100 // an unlisted percentile is still a valid claim
	}
	t := sloChecks(s)
	return &claimCounter{quantile: q, targets: t, n: make([]int, len(t)), over: make([]int, len(t))}
}

// failed counts a sent request that did not complete ok as over every target.
func (cc *claimCounter) failed(s loadgen.State) {
	if s == loadgen.StateNotSent || s == loadgen.StateCancelled {
		return
	}
	for i := range cc.targets {
		cc.n[i]++
		cc.over[i]++
	}
}

// add counts one ok request's defined metrics against each target.
func (cc *claimCounter) add(m requestMetrics) {
	for i, t := range cc.targets {
		var d time.Duration
		var ok bool
		switch t.metric {
		case "ttft":
			d, ok = m.ttft, m.ttftOK
		case "tpot":
			d, ok = m.tpot, m.tpotOK
		case "e2e":
			d, ok = m.e2e, m.e2eOK
		}
		if !ok {
			continue
		}
		slack := cc.margin
		if t.metric == "tpot" && m.tokens > 1 {
			slack /= time.Duration(m.tokens - 1)
		}
		cc.n[i]++
		if ms(d) > t.ms+ms(slack) {
			cc.over[i]++
		}
	}
}

func (cc *claimCounter) claims(conf float64) []report.SLOClaim {
	var out []report.SLOClaim
	for i, t := range cc.targets {
		es, err := EarlyStopping(cc.n[i], cc.over[i], cc.quantile, conf)
		if err != nil {
			continue // the quantile or confidence is invalid: no claim can be tested
		}
		out = append(out, report.SLOClaim{Metric: t.metric, TargetMs: t.ms, EarlyStop: es})
	}
	return out
}

// arrivalRate is (n − 1) / (last − first scheduled time) over the records,
// in req/s; nil when fewer than two or they share one scheduled time.
func arrivalRate(recs []*loadgen.Record) *float64 {
	if len(recs) < 2 {
		return nil
	}
	first, last := recs[0].ScheduledAt, recs[0].ScheduledAt
	for _, r := range recs[1:] {
		first, last = min(first, r.ScheduledAt), max(last, r.ScheduledAt)
	}
	if last <= first {
		return nil
	}
	return ptr(float64(len(recs)-1) / (last - first).Seconds())
}

// promptChecker folds sent records into a PromptCheck.
type promptChecker struct {
	c           report.PromptCheck
	tokens, pct []float64
}

func (p *promptChecker) add(r *loadgen.Record) {
	if r.PromptTokens == 0 || r.InputTokens == 0 {
		return
	}
	p.c.Reported++
	if r.PromptText {
		p.c.TextPrompts++
	}
	if r.PromptMismatch() {
		p.c.Mismatches++
		d := float64(r.PromptTokens - r.InputTokens)
		p.tokens = append(p.tokens, d)
		p.pct = append(p.pct, 100*d/float64(r.InputTokens))
	}
}

func (p *promptChecker) check() report.PromptCheck {
	if len(p.tokens) > 0 {
		slices.Sort(p.tokens)
		slices.Sort(p.pct)
		n := len(p.tokens) - 1
		p.c.Diff = &report.PromptDiff{
			MinTokens: int(p.tokens[0]), MedianTokens: int(stats.NearestRank(p.tokens, 0.5)), MaxTokens: int(p.tokens[n]),
			MinPct: p.pct[0], MedianPct: stats.NearestRank(p.pct, 0.5), MaxPct: p.pct[n],
		}
	}
	return p.c
}
