package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// loadedProbes is the loaded quickstart's baseline (TestSuspectCapacity):
// 10 clean met, 16.82 client-bound met, 20 client-bound missed with 52 of
// 161 over the 500 ms TTFT target; loose is the 20 req/s probe's count
// over the target loosened by its lateness.
func loadedProbes(loose int) []report.CapacityProbe {
	probe := func(load float64, n, over int, clientBound bool) report.CapacityProbe {
		return report.CapacityProbe{LoadRPS: load, Source: "search", ClientBound: clientBound, DurationS: 20,
			Attainment: []report.SLOAttainment{{Metric: "ttft", TargetMs: 500, N: n, Over: over}}}
	}
	ps := []report.CapacityProbe{probe(10, 47, 0, false), probe(16.82, 478, 0, true), probe(20, 161, 52, true)}
	ps[2].DispatchLagMaxMs, ps[2].LatenessMarginMs = 7.6, 27.6
	ps[2].AttainmentLoosened = []report.SLOAttainment{{Metric: "ttft", TargetMs: 500, N: 161, Over: loose}}
	return ps
}

// TestRobustMissStands: a client-bound probe whose miss survives every
// target loosened by its lateness (the largest dispatch lag plus a step)
// is the server's miss: the fail end stands, the capacity is given, and
// the load ends the interval on its loosened counts.
func TestRobustMissStands(t *testing.T) {
	t.Parallel()
	s := Search{MinRPS: 5, MaxRPS: 48, RelativePrecision: 0.25, Quantile: 0.9}
	a := s.Capacity("baseline", loadedProbes(50), StopBracketed)
	p := a.Probes[2]
	if !p.MissRobustToLateness || SuspectProbe(p) != "" || a.Probes[1].MissRobustToLateness {
		t.Errorf("probes: %+v", a.Probes)
	}
	if SuspectFailEnd(a) || SuspectCapacity(a) || a.SuspectFailEnd || math.Abs(a.CapacityRPS.Value-math.Sqrt(16.82*20)) > 1e-9 {
		t.Errorf("robust miss at the fail end: %+v", a)
	}
	// 111 of 161 within the loosened target (69 %) is a sure miss at p90.
	if e := a.CapacityRPS; !e.Interval || e.High != 20 || p.Decided != "missed" {
		t.Errorf("interval %+v, probe decided %q: want the robust miss to end it", e, p.Decided)
	}
	// A results.json written before the loosened counts has none: its
	// client-bound miss is suspect, as it was.
	old := loadedProbes(50)
	old[2].AttainmentLoosened = nil
	if b := s.Capacity("baseline", old, StopBracketed); !b.SuspectFailEnd || b.Probes[2].MissRobustToLateness {
		t.Errorf("no loosened counts: %+v", b)
	}
}

// TestFragileMissSuspect: a client-bound probe that meets the SLO once its
// targets are loosened by its lateness may have been missed by the client:
// the fail end is suspect, the capacity withheld, the note says why.
func TestFragileMissSuspect(t *testing.T) {
	t.Parallel()
	s := Search{MinRPS: 5, MaxRPS: 48, RelativePrecision: 0.25, Quantile: 0.9}
	a := s.Capacity("baseline", loadedProbes(10), StopBracketed) // 151/161 = 94 % within
	if a.Probes[2].MissRobustToLateness || SuspectProbe(a.Probes[2]) != SuspectClientBound || !a.SuspectFailEnd || a.CapacityRPS.Value != 0 {
		t.Errorf("fragile miss: %+v", a)
	}
	if want := "≥ 16.82 req/s (met); its misses at 20.00 req/s were client-bound probes only, so no capacity: " + ClientBoundMissWhy; a.CapacityRPS.Note != want {
		t.Errorf("note %q, want %q", a.CapacityRPS.Note, want)
	}
	if SuspectKinds(a) != SuspectClientBound || SuspectMissWhy(a) != ClientBoundMissWhy {
		t.Errorf("kinds %q, why %q", SuspectKinds(a), SuspectMissWhy(a))
	}
}

// TestHostSlowedSuspect: a probe whose simulated server lost more than 1 %
// of its span to host stalls is suspect whatever the client did (a robust
// client-bound miss, or a clean one); below the share it stands; a met
// host-slowed probe stands (met though slowed). The note names the reason
// and the seconds lost, once.
func TestHostSlowedSuspect(t *testing.T) {
	t.Parallel()
	s := Search{MinRPS: 5, MaxRPS: 48, RelativePrecision: 0.25, Quantile: 0.9}
	for _, clientBound := range []bool{true, false} {
		ps := loadedProbes(50)
		ps[2].ClientBound = clientBound
		ps[2].HostStallS = 0.19 // under 1 % of 20 s: stands
		if a := s.Capacity("baseline", ps, StopBracketed); a.SuspectFailEnd || a.Probes[2].HostSlowed {
			t.Errorf("client-bound %v, 0.19 s lost of 20: %+v", clientBound, a)
		}
		ps[2].HostStallS = 2.5
		ps[1].HostStallS = 3 // the met load stands
		a := s.Capacity("baseline", ps, StopBracketed)
		if !a.Probes[2].HostSlowed || SuspectProbe(a.Probes[2]) != SuspectHostSlowed || !a.SuspectFailEnd || a.CapacityRPS.Value != 0 || a.PassRPS != 16.82 {
			t.Errorf("client-bound %v, 2.5 s lost of 20: %+v", clientBound, a)
		}
		if a.CapacityRPS.Note != "≥ 16.82 req/s (met); its misses at 20.00 req/s were host-slowed probes only, so no capacity: "+
			"the simulated server, sharing this machine's CPUs, lost 2.50 s to host stalls during those probes (more than 1 % of each), so the misses may be the host's, not the server's; rerun on an idle machine" {
			t.Errorf("note %q", a.CapacityRPS.Note)
		}
	}
	// Two arms, one suspect for each reason: both reasons, each once.
	slowed := loadedProbes(50)
	slowed[2].HostStallS = 2.5
	a, b := s.Capacity("a", slowed, StopBracketed), s.Capacity("b", loadedProbes(10), StopBracketed)
	why := SuspectMissWhy(a, b)
	if SuspectKinds(a, b) != "client-bound or host-slowed" || strings.Count(why, "rerun") != 1 || !strings.HasPrefix(why, clientBoundMisses+"; the simulated server") {
		t.Errorf("kinds %q, why %q", SuspectKinds(a, b), why)
	}
}

// TestLooseAttainment recounts records against targets loosened by a
// margin: with none it counts as a probe does (a failed request over every
// target, a cancelled one over TTFT only when late, warm-up not at all);
// TTFT and E2E loosen by the margin, TPOT by margin / (tokens − 1).
func TestLooseAttainment(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	ok := func(sched, disp, ttft, e2e time.Duration, tokens int) loadgen.Record {
		sent := sched + disp
		return loadgen.Record{State: loadgen.StateOK, ScheduledAt: sched, DispatchedAt: sent, SentAt: sent, OutputTokens: tokens,
			Events: []loadgen.TokenEvent{{At: sent + ttft, Tokens: 1}}, EndAt: sent + e2e, FinalAt: sent + e2e}
	}
	recs := []loadgen.Record{
		ok(1000*ms, 2*ms, 510*ms, 900*ms, 11), // TTFT 10 ms over; TPOT 39 ms
		ok(1100*ms, 9*ms, 400*ms, 905*ms, 11), // TPOT 50.5 ms: over 50, within 50 + 10/10 with a 10 ms margin
		ok(1200*ms, 0, 700*ms, 1200*ms, 11),   // 200 over TTFT
		{State: loadgen.StateHTTPError, ScheduledAt: 1300 * ms, DispatchedAt: 1300 * ms, SentAt: 1300 * ms, FinalAt: 1400 * ms},
		{State: loadgen.StateCancelled, ScheduledAt: 1400 * ms, DispatchedAt: 1400 * ms, SentAt: 1400 * ms, FinalAt: 1905 * ms},
		{State: loadgen.StateCancelled, ScheduledAt: 1500 * ms, DispatchedAt: 1500 * ms, SentAt: 1500 * ms, FinalAt: 1700 * ms},
		{Warmup: true, State: loadgen.StateHTTPError, ScheduledAt: 0, DispatchedAt: 40 * ms, SentAt: 40 * ms},
		{QueuedByCap: true, State: loadgen.StateHTTPError, ScheduledAt: 1600 * ms, DispatchedAt: 1900 * ms, SentAt: 1900 * ms},
	}
	slo := report.SLO{TTFTMs: 500, TPOTMs: 50, Percentile: 90}
	count := func(margin time.Duration) [2][2]int {
		var out [2][2]int
		for i, a := range LooseAttainment(recs, slo, margin) {
			out[i] = [2]int{a.N, a.Over}
		}
		return out
	}
	// TTFT: 3 ok + 2 failed (error, queued) + 1 late cancelled, 3 over at 0; TPOT: 3 ok + 2 failed.
	if got, want := count(0), [2][2]int{{6, 5}, {5, 3}}; got != want {
		t.Errorf("margin 0: %v, want %v", got, want)
	}
	if got, want := count(10*ms), [2][2]int{{5, 3}, {5, 2}}; got != want {
		t.Errorf("margin 10 ms: %v, want %v", got, want)
	}
	// Token gaps of 20, 30 and 50 ms (one request) and 25 ms (a cancelled
	// one): the median step is 25 ms.
	recs[0].Events = append(recs[0].Events, loadgen.TokenEvent{At: recs[0].Events[0].At + 20*ms, Tokens: 1},
		loadgen.TokenEvent{At: recs[0].Events[0].At + 50*ms, Tokens: 1}, loadgen.TokenEvent{At: recs[0].Events[0].At + 100*ms, Tokens: 1})
	recs[4].Events = []loadgen.TokenEvent{{At: 1500 * ms, Tokens: 1}, {At: 1525 * ms, Tokens: 1}}
	lag, step, margin := LatenessMargin(recs)
	if lag != 40*ms || step != 25*ms || margin != 65*ms {
		t.Errorf("LatenessMargin = %v, %v, %v; want 40ms (the warm-up send; not the capped one), 25ms, 65ms", lag, step, margin)
	}
	if !slices.Equal(LooseAttainment(nil, slo, 0), []report.SLOAttainment{{Metric: "ttft", TargetMs: 500}, {Metric: "tpot", TargetMs: 50}}) {
		t.Errorf("no records: %+v", LooseAttainment(nil, slo, 0))
	}
}

// TestRobustMissJudgedOverScheduled: a probe stopped early, once 53 of the
// 529 requests it schedules were over TTFT (of 261 judged by then), is
// robust to its lateness only if its loosened over-count alone is still
// more than 52 of the 529: 51 over of 259 judged (20 % of those, a "miss"
// read against the judged ones) leaves the SLO reachable by the requests it
// cancelled, so the miss is suspect (a new user found the loaded
// quickstart's misses marked robust on such counts).
func TestRobustMissJudgedOverScheduled(t *testing.T) {
	t.Parallel()
	s := Search{MinRPS: 5, MaxRPS: 48, RelativePrecision: 0.25, Quantile: 0.9}
	probes := func(looseOver int) []report.CapacityProbe {
		ps := loadedProbes(0)
		ps[2].Attainment = []report.SLOAttainment{{Metric: "ttft", TargetMs: 500, N: 261, Over: 53}}
		ps[2].AttainmentLoosened = []report.SLOAttainment{{Metric: "ttft", TargetMs: 500, N: 259, Over: looseOver}}
		ps[2].Scheduled = 529
		return ps
	}
	if a := s.Capacity("baseline", probes(51), StopBracketed); a.Probes[2].MissRobustToLateness || !a.SuspectFailEnd {
		t.Errorf("51 of 529 loosened: robust %v, suspect fail end %v; want suspect", a.Probes[2].MissRobustToLateness, a.SuspectFailEnd)
	}
	if a := s.Capacity("baseline", probes(53), StopBracketed); !a.Probes[2].MissRobustToLateness || a.SuspectFailEnd {
		t.Errorf("53 of 529 loosened: robust %v, suspect fail end %v; want robust", a.Probes[2].MissRobustToLateness, a.SuspectFailEnd)
	}
}
