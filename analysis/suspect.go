package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// HostStallShare is the share of a probe's span its simulated server may
// lose to host stalls (sim.Server.StallLost) before the probe is
// host-slowed: 1 %, the share of late sends the client-bound rule
// tolerates. A server that lost a share s of a probe served about s less
// work than its model over it, well inside the search's precision (25 % on
// the quickstart) below 1 %; stalls longer than scheduler.max_catch_up_ms
// also queue every request behind them, which is what can turn a load the
// model meets into a miss.
const HostStallShare = 0.01

// Reasons a probe's miss may not be the server's (SuspectProbe).
const (
	SuspectClientBound = "client-bound"
	SuspectHostSlowed  = "host-slowed"
)

// LatenessMargin is a probe's largest dispatch lag (loadgen.Record's
// DispatchLag over every dispatched request, warm-up included: those load
// the server too; not the ones the in-flight cap held, whose lateness an
// on-time client has as well), one decode step (the nearest-rank median of
// every inter-token gap its records hold, whatever their state: a request
// sent up to the lag late may also join the next step) and D = lag + step.
// It reads the records, not the cell's ITL distribution, which refuses a
// p50 for want of samples in a probe stopped early.
func LatenessMargin(recs []loadgen.Record) (lag, step, margin time.Duration) {
	var gaps []time.Duration
	for i := range recs {
		gaps = append(gaps, recs[i].ITLs()...)
		if recs[i].QueuedByCap {
			continue
		}
		if d, ok := recs[i].DispatchLag(); ok {
			lag = max(lag, d)
		}
	}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		step = gaps[(len(gaps)+1)/2-1]
	}
	return lag, step, lag + step
}

// LooseAttainment counts recs' measured requests against every declared
// target of slo loosened by margin (TTFT and E2E by margin, TPOT by
// margin / (output tokens − 1)), as a probe's Attainment counts them: a
// sent request that failed is over every target, a cancelled one over TTFT
// when CancelledOverTTFT (with margin) and nowhere else. Under FCFS-like
// queueing a request's departure is 1-Lipschitz in the arrival times
// (Lindley's recursion), so sends late by at most margin (including one
// step's quantization) move no latency, counted from its own send, by more
// than margin: a request over a loosened target is over the target for an
// on-time client too, and the counts are a lower bound on its.
func LooseAttainment(recs []loadgen.Record, slo report.SLO, margin time.Duration) []report.SLOAttainment {
	cc := newClaimCounter(slo)
	cc.margin = margin
	ttft := -1
	for i, t := range cc.targets {
		if t.metric == "ttft" {
			ttft = i
		}
	}
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Warmup:
		case r.State == loadgen.StateOK:
			cc.add(measure(r))
		case r.State == loadgen.StateCancelled:
			if ttft >= 0 && CancelledOverTTFT(r, slo.TTFTMs, margin) {
				cc.n[ttft]++
				cc.over[ttft]++
			}
		default:
			cc.failed(r.State)
		}
	}
	out := make([]report.SLOAttainment, 0, len(cc.targets))
	for i, t := range cc.targets {
		out = append(out, report.SLOAttainment{Metric: t.metric, TargetMs: t.ms, N: cc.n[i], Over: cc.over[i]})
	}
	return out
}

// CancelledOverTTFT reports whether r, cancelled after it was sent, is
// over a TTFT target of targetMs loosened by margin: its first token, or
// its end when it had none, came more than that after its send (over it
// whatever would have come).
func CancelledOverTTFT(r *loadgen.Record, targetMs float64, margin time.Duration) bool {
	if targetMs <= 0 || r.State != loadgen.StateCancelled || r.SentAt <= 0 {
		return false
	}
	by := r.FinalAt
	if len(r.Events) > 0 {
		by = r.Events[0].At
	}
	return ms(by-r.SentAt) > targetMs+ms(margin)
}

// judgeProbe sets p's MissRobustToLateness (a client-bound probe that
// missed at quantile q and misses still against its AttainmentLoosened)
// and HostSlowed (HostStallS over HostStallShare of DurationS).
func judgeProbe(p *report.CapacityProbe, q float64) {
	p.MissRobustToLateness = p.ClientBound && len(p.AttainmentLoosened) > 0 &&
		!Met(p.Attainment, q) && missedOver(p.AttainmentLoosened, q, p.Scheduled)
	p.HostSlowed = p.HostSlowed || p.DurationS > 0 && p.HostStallS > HostStallShare*p.DurationS
}

// SuspectProbe is the one test of whether p's miss may not be the server's,
// and why: SuspectHostSlowed when its simulated server lost more than
// HostStallShare of the probe to host stalls (whatever the client did),
// SuspectClientBound when it was client-bound and its miss is not robust to
// the client's lateness (MissRobustToLateness; a results.json written before
// that field has none, so its client-bound probes are suspect, as they were
// then), "" when it stands. It reads the flags Search.Capacity set; a probe
// at a load that met is asked only through its load's pooled outcome.
func SuspectProbe(p report.CapacityProbe) string {
	switch {
	case p.HostSlowed:
		return SuspectHostSlowed
	case p.ClientBound && !p.MissRobustToLateness:
		return SuspectClientBound
	}
	return ""
}

// SuspectFailEnd reports whether the fail end of a's bracket rests on
// suspect probes only (SuspectProbe): a load missed (FailRPS > 0) and
// every probe that ran to its end at FailRPS is suspect. A late client
// makes a load look harder than it is (tokens stamped late, sends late),
// and a host that stalls the simulated server makes it slower than its
// model, so the client machine or the host, not the server, may have
// missed it. A client-bound probe whose miss survives targets loosened by
// its lateness stands, as does a clean probe's.
func SuspectFailEnd(a report.CapacityArm) bool {
	return len(failEndSuspects(a)) > 0
}

// failEndSuspects is the probes at a's fail end when every one of them is
// suspect (SuspectFailEnd), else nil.
func failEndSuspects(a report.CapacityArm) []report.CapacityProbe {
	if a.FailRPS <= 0 {
		return nil
	}
	var out []report.CapacityProbe
	for _, p := range a.Probes {
		if p.Incomplete != "" || p.LoadRPS != a.FailRPS {
			continue
		}
		if SuspectProbe(p) == "" {
			return nil
		}
		out = append(out, p)
	}
	return out
}

// SuspectKinds names the reasons (SuspectProbe) found at the suspect fail
// ends of arms, in one phrase: "client-bound", "host-slowed" or
// "client-bound or host-slowed"; "" when none is suspect.
func SuspectKinds(arms ...report.CapacityArm) string {
	bound, slowed, _ := suspectReasons(arms)
	switch {
	case bound && slowed:
		return SuspectClientBound + " or " + SuspectHostSlowed
	case slowed:
		return SuspectHostSlowed
	case bound:
		return SuspectClientBound
	case slices.ContainsFunc(arms, SuspectCapacity):
		return "suspect" // flagged so, its probes no longer say why
	}
	return ""
}

// suspectReasons is which reasons the suspect fail ends of arms have, and
// the host-stall seconds their host-slowed probes lost.
func suspectReasons(arms []report.CapacityArm) (bound, slowed bool, lostS float64) {
	for _, a := range arms {
		for _, p := range failEndSuspects(a) {
			switch SuspectProbe(p) {
			case SuspectHostSlowed:
				slowed = true
				lostS += p.HostStallS
			case SuspectClientBound:
				bound = true
			}
		}
	}
	return bound, slowed, lostS
}

// SuspectMissWhy says why the suspect misses at arms' fail ends decide
// nothing and what to do about it, once per reason; ClientBoundMissWhy
// when they are client-bound only. The first screen says it once, after
// the capacities it withheld.
func SuspectMissWhy(arms ...report.CapacityArm) string {
	bound, slowed, lostS := suspectReasons(arms)
	var why []string
	if bound {
		why = append(why, clientBoundMisses)
	}
	if slowed {
		why = append(why, fmt.Sprintf("the simulated server, sharing this machine's CPUs, lost %s s to host stalls during those probes (more than %g %% of each), so the misses may be the host's, not the server's", report.Num(lostS), 100*HostStallShare))
	}
	if len(why) == 0 {
		if slices.ContainsFunc(arms, SuspectCapacity) {
			return ClientBoundMissWhy // flagged so before the reasons were recorded
		}
		return ""
	}
	return strings.Join(why, "; ") + "; rerun on an idle machine"
}

// missedOver reports whether counts miss quantile q however the requests
// not counted would have ended: for some target, Over is more than
// ⌊(1 − q)·M⌋ of M = max(scheduled, N) requests (the rule a probe stops
// on). A probe stopped early counts only the requests judged by then, so
// testing Over/N against q (Met) would read a loosened count of 51 over of
// 259 judged as a miss when 52 of the 529 scheduled may be over.
func missedOver(att []report.SLOAttainment, q float64, scheduled int) bool {
	for _, a := range att {
		m := max(scheduled, a.N)
		if m > 0 && float64(a.Over) > OverLimit(q, m) {
			return true
		}
	}
	return false
}

// OverLimit is the most of n requests that can be over a target with the
// share within it still at quantile q: ⌊(1 − q)·n⌋, rounding error aside
// (1 − 0.9 is 0.0999…98 in floating point). A search probe stops once some
// target's count passes it, and missedOver judges a loosened count by it.
func OverLimit(q float64, n int) float64 {
	return math.Floor((1-q)*float64(n) + 1e-9)
}
