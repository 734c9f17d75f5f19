package telemetry

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"

	"github.com/transferlab/transferlab/loadgen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// relTol is the tolerance of comparing exported float sums with the truth:
// both add the same ≤ a few hundred float64 values of seconds, possibly in
// another order, so they agree to well under 1e-9 relative.
const relTol = 1e-9

func near(got, want float64) bool {
	return math.Abs(got-want) <= relTol*math.Max(1, math.Abs(want))
}

// cellLength is the end of a synthetic cell's span after its start: 50
// requests 100 ms apart end before 5.2 s.
const cellLength = 10 * time.Second

type cellID struct {
	arm  string
	load float64
}

// quickstart feeds a quickstart-sized run (2 arms × 3 offered loads × 1
// repetition × 50 records = 300 requests) through e and returns the truth per
// cell, the records per cell and the cells' time zero.
func quickstart(ctx context.Context, t *testing.T, e *Exporter) (map[cellID]*truth, map[cellID][]*loadgen.Record, time.Time) {
	t.Helper()
	start := time.Date(2026, 11, 29, 8, 0, 0, 123456789, time.UTC)
	truths := map[cellID]*truth{}
	records := map[cellID][]*loadgen.Record{}
	for _, arm := range []string{"baseline", "candidate"} {
		for _, load := range []float64{0.5, 1, 2.5} {
			// As experiment does: the cell is exported after it ran, with
			// the replay's start and an end after its last record.
			c := e.StartCell(ctx, arm, load, 0, CellStartedAt(start))
			recs, tr := synthCell(arm, load, 0, 50)
			sink := c.Sink(start)
			for _, r := range recs {
				if err := sink.Add(r); err != nil {
					t.Fatalf("Add: %v", err)
				}
			}
			if err := sink.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := c.RecordPower(ctx, 0, 612.5); err != nil {
				t.Fatalf("RecordPower: %v", err)
			}
			if err := c.RecordVRAM(ctx, 0, 80<<30); err != nil {
				t.Fatalf("RecordVRAM: %v", err)
			}
			c.EndAt(start.Add(cellLength))
			truths[cellID{arm, load}] = tr
			records[cellID{arm, load}] = recs
		}
	}
	return truths, records, start
}

// histPoint is one histogram data point, explicit or exponential.
type histPoint struct {
	attrs map[string]any
	count uint64
	sum   float64
}

func histPoints(t *testing.T, m *metricpb.Metric) []histPoint {
	t.Helper()
	var out []histPoint
	switch d := m.GetData().(type) {
	case *metricpb.Metric_Histogram:
		for _, p := range d.Histogram.GetDataPoints() {
			out = append(out, histPoint{attrMap(p.GetAttributes()), p.GetCount(), p.GetSum()})
		}
	case *metricpb.Metric_ExponentialHistogram:
		for _, p := range d.ExponentialHistogram.GetDataPoints() {
			out = append(out, histPoint{attrMap(p.GetAttributes()), p.GetCount(), p.GetSum()})
		}
	default:
		t.Fatalf("%s: data %T, want a histogram", m.GetName(), m.GetData())
	}
	return out
}

// checkCommon fails unless a metric point carries the labels every point must.
func checkCommon(t *testing.T, name string, a map[string]any) cellID {
	t.Helper()
	want := map[string]any{
		"gen_ai.operation.name": "text_completion", "gen_ai.provider.name": "transferlab.sim",
		"gen_ai.request.model": "test-model", "transferlab.simulated": true,
	}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("%s: attribute %s = %v, want %v (all: %v)", name, k, a[k], v, a)
		}
	}
	arm, ok1 := a["transferlab.arm"].(string)
	load, ok2 := a["transferlab.offered_load_rps"].(float64)
	if !ok1 || !ok2 {
		t.Fatalf("%s: point without arm/offered load: %v", name, a)
	}
	return cellID{arm, load}
}

func TestQuickstartExportOTLPHTTP(t *testing.T) {
	for _, hist := range []string{HistogramExplicit, HistogramExponential} {
		t.Run(hist, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rc := newReceiver(t)
			var warn syncBuffer
			cfg := Config{
				Enabled: true, Exporter: ExporterOTLPHTTP, Endpoint: rc.srv.URL,
				Headers:         map[string]string{"X-Api-Key": "secret"},
				ShutdownTimeout: 30 * time.Second, // generous for a loaded CI machine; a healthy local receiver answers in ms
				MetricInterval:  time.Hour,        // only the final export at Shutdown
				Histogram:       hist,
			}
			e, err := Start(ctx, cfg, RunInfo{Name: "quickstart", ConfigSHA256: "c0ffee", Model: "test-model", Simulated: true}, WithWarnings(&warn))
			if err != nil {
				t.Fatal(err)
			}
			truths, records, start := quickstart(ctx, t, e)
			if err := e.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			if warn.Len() > 0 {
				t.Errorf("warnings with a healthy receiver: %s", warn.String())
			}
			if st := e.Stats(); st.SpanExports == 0 || st.MetricExports == 0 || st.SpanExportFailures+st.MetricExportFailures != 0 {
				t.Errorf("Stats = %+v, want exports of both signals and no failure", st)
			}
			for _, h := range rc.headers {
				if h.Get("X-Api-Key") != "secret" {
					t.Errorf("export without the configured header: %v", h)
				}
			}
			checkSpans(t, rc.spans(), truths, records, start)
			checkMetrics(t, rc.lastMetrics(), truths, hist)
		})
	}
}

func checkSpans(t *testing.T, spans []*tracepb.Span, truths map[cellID]*truth, records map[cellID][]*loadgen.Record, start time.Time) {
	t.Helper()
	nrec := 0
	for _, recs := range records {
		nrec += len(recs)
	}
	if want := 1 + len(records) + nrec; len(spans) != want {
		t.Fatalf("received %d spans, want %d (1 run + %d cells + %d requests)", len(spans), want, len(records), nrec)
	}
	byID := map[string]*tracepb.Span{}
	var roots []*tracepb.Span
	for _, s := range spans {
		byID[hex.EncodeToString(s.GetSpanId())] = s
		if len(s.GetParentSpanId()) == 0 {
			roots = append(roots, s)
		}
	}
	if len(roots) != 1 || roots[0].GetName() != SpanRun {
		t.Fatalf("want exactly one root span %q, got %d", SpanRun, len(roots))
	}
	root := roots[0]
	if a := attrMap(root.GetAttributes()); a["transferlab.run.name"] != "quickstart" || a["transferlab.config.sha256"] != "c0ffee" || a["gen_ai.request.model"] != "test-model" || a["transferlab.simulated"] != true {
		t.Errorf("root span attributes = %v", a)
	}
	seen := map[cellID]map[int64]bool{}
	cells := 0
	for _, s := range spans {
		if !bytes.Equal(s.GetTraceId(), root.GetTraceId()) {
			t.Fatalf("span %q in another trace", s.GetName())
		}
		parent := byID[hex.EncodeToString(s.GetParentSpanId())]
		a := attrMap(s.GetAttributes())
		switch s.GetName() {
		case SpanRun:
		case SpanCell:
			cells++
			if parent != root {
				t.Errorf("cell span %v: parent is not the run span", a)
			}
			if got, want := s.GetStartTimeUnixNano(), uint64(start.UnixNano()); got != want {
				t.Errorf("cell span %v starts at %d, want CellStartedAt's %d", a, got, want)
			}
			if got, want := s.GetEndTimeUnixNano(), uint64(start.Add(cellLength).UnixNano()); got != want {
				t.Errorf("cell span %v ends at %d, want EndAt's %d", a, got, want)
			}
			id := cellID{a["transferlab.arm"].(string), a["transferlab.offered_load_rps"].(float64)}
			tr := truths[id]
			if tr == nil || a["transferlab.repetition"] != int64(0) {
				t.Fatalf("cell span with unexpected attributes %v", a)
			}
			for _, st := range loadgen.States {
				if got := a["transferlab.requests."+string(st)]; got != int64(tr.states[st]) {
					t.Errorf("cell %v: transferlab.requests.%s = %v, want %d", id, st, got, tr.states[st])
				}
			}
		case "text_completion test-model":
			if parent == nil || parent.GetName() != SpanCell {
				t.Fatalf("request span %v: parent is not a cell span", a)
			}
			pa := attrMap(parent.GetAttributes())
			id := cellID{a["transferlab.arm"].(string), a["transferlab.offered_load_rps"].(float64)}
			if pa["transferlab.arm"] != id.arm || pa["transferlab.offered_load_rps"] != id.load {
				t.Errorf("request span %v under cell %v", a, pa)
			}
			if s.GetStartTimeUnixNano() < parent.GetStartTimeUnixNano() || s.GetEndTimeUnixNano() > parent.GetEndTimeUnixNano() {
				t.Errorf("request span %v not inside its cell span", a)
			}
			if s.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
				t.Errorf("request span kind %v, want client", s.GetKind())
			}
			reqID := a["transferlab.request.id"].(int64)
			if seen[id] == nil {
				seen[id] = map[int64]bool{}
			}
			if seen[id][reqID] {
				t.Errorf("cell %v: request %d exported twice", id, reqID)
			}
			seen[id][reqID] = true
			checkRequestSpan(t, s, a, records[id][reqID], start)
		default:
			t.Errorf("unexpected span name %q", s.GetName())
		}
	}
	if cells != len(records) {
		t.Errorf("%d cell spans, want %d", cells, len(records))
	}
}

func checkRequestSpan(t *testing.T, s *tracepb.Span, a map[string]any, r *loadgen.Record, start time.Time) {
	t.Helper()
	name := fmt.Sprintf("request %d (%s)", r.RequestID, r.State)
	want := map[string]any{
		"transferlab.repetition": int64(0), "transferlab.trace.source_line": int64(r.SourceLine),
		"transferlab.request.state": string(r.State), "transferlab.warmup": r.Warmup,
		"gen_ai.usage.output_tokens": int64(r.OutputTokens), "gen_ai.usage.input_tokens": int64(r.InputTokens),
		"gen_ai.request.max_tokens": int64(8), "gen_ai.operation.name": "text_completion",
	}
	if r.State != loadgen.StateOK {
		want["error.type"] = string(r.State)
	}
	if r.HTTPStatus != 0 {
		want["http.response.status_code"] = int64(r.HTTPStatus)
	}
	if r.FinishReason != "" {
		want["gen_ai.response.finish_reasons"] = "[" + r.FinishReason + "]"
	}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("%s: %s = %v, want %v", name, k, a[k], v)
		}
	}
	// Timestamps are the run's start plus the record's offsets, to the nanosecond.
	from, to := r.SentAt, r.EndAt
	switch {
	case r.State == loadgen.StateNotSent:
		from, to = r.ScheduledAt, r.ScheduledAt
	case r.EndAt == 0 && len(r.Events) > 0:
		to = r.Events[len(r.Events)-1].At
	case r.EndAt == 0:
		to = r.SentAt
	}
	if got, want := s.GetStartTimeUnixNano(), uint64(start.Add(from).UnixNano()); got != want {
		t.Errorf("%s: start %d, want %d", name, got, want)
	}
	if got, want := s.GetEndTimeUnixNano(), uint64(start.Add(to).UnixNano()); got != want {
		t.Errorf("%s: end %d, want %d", name, got, want)
	}
	var events []string
	for _, ev := range s.GetEvents() {
		events = append(events, ev.GetName())
		if ev.GetName() == EventFirstToken && ev.GetTimeUnixNano() != uint64(start.Add(r.Events[0].At).UnixNano()) {
			t.Errorf("%s: first-token event at %d, want %d", name, ev.GetTimeUnixNano(), start.Add(r.Events[0].At).UnixNano())
		}
	}
	wantEvents := []string{EventEnd}
	if len(r.Events) > 0 {
		wantEvents = []string{EventFirstToken, EventEnd}
		if r.Events[0].Reasoning {
			wantEvents = []string{EventFirstToken, EventFirstAnswerToken, EventEnd}
		}
	}
	if !slices.Equal(events, wantEvents) {
		t.Errorf("%s: events %v, want %v", name, events, wantEvents)
	}
	if isErr := s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR; isErr != (r.State != loadgen.StateOK) {
		t.Errorf("%s: status %v", name, s.GetStatus())
	}
}

func checkMetrics(t *testing.T, ms map[string]*metricpb.Metric, truths map[cellID]*truth, hist string) {
	t.Helper()
	units := map[string]string{
		MetricOperationDuration: "s", MetricTimeToFirstChunk: "s", MetricTimePerOutputChunk: "s",
		MetricTTFT: "s", MetricTTFTIntended: "s", MetricTTFO: "s", MetricTPOT: "s", MetricScheduleLag: "s", MetricTokenUsage: "{token}",
		MetricTokens: "{token}", MetricRequests: "{request}", MetricGPUPower: "W", MetricGPUMemoryUsed: "By",
	}
	for name, unit := range units {
		m := ms[name]
		if m == nil {
			t.Errorf("metric %s not exported", name)
			continue
		}
		if m.GetUnit() != unit {
			t.Errorf("metric %s: unit %q, want %q", name, m.GetUnit(), unit)
		}
	}
	if t.Failed() {
		return
	}

	// Latency histograms: count and sum per cell, over all error.type values.
	for _, name := range []string{MetricOperationDuration, MetricTimeToFirstChunk, MetricTimePerOutputChunk, MetricTTFT, MetricTTFTIntended, MetricTTFO, MetricTPOT, MetricScheduleLag} {
		got := map[cellID]histPoint{}
		for _, p := range histPoints(t, ms[name]) {
			id := checkCommon(t, name, p.attrs)
			g := got[id]
			g.count += p.count
			g.sum += p.sum
			got[id] = g
		}
		for id, tr := range truths {
			// loadgen's TPOT is a time.Duration quotient, truncated to the
			// nanosecond below the exact value the truth holds: allow 1 ns a sample.
			sumOK := near(got[id].sum, tr.sum[name])
			if name == MetricTPOT {
				diff := tr.sum[name] - got[id].sum
				sumOK = diff >= -relTol && diff <= float64(tr.count[name])*1e-9+relTol
			}
			if got[id].count != uint64(tr.count[name]) || !sumOK {
				t.Errorf("%s %v: count %d sum %.12g s, want %d and %.12g s", name, id, got[id].count, got[id].sum, tr.count[name], tr.sum[name])
			}
		}
	}
	if hist == HistogramExplicit {
		h := ms[MetricOperationDuration].GetHistogram()
		if b := h.GetDataPoints()[0].GetExplicitBounds(); !slices.Equal(b, durationBuckets()) {
			t.Errorf("%s bounds %v, want the advised %v", MetricOperationDuration, b, durationBuckets())
		}
	}
	// Exemplars link histogram points to request spans (trace-based filter).
	if hist == HistogramExplicit {
		ex := 0
		for _, p := range ms[MetricTTFT].GetHistogram().GetDataPoints() {
			for _, e := range p.GetExemplars() {
				if len(e.GetTraceId()) != 16 || len(e.GetSpanId()) != 8 {
					t.Errorf("%s exemplar without trace/span id: %v", MetricTTFT, e)
				}
				ex++
			}
		}
		if ex == 0 {
			t.Errorf("%s: no exemplars exported", MetricTTFT)
		}
	}
	// A timeout's TTFT is labelled error.type=timeout; an ok one has no error.type.
	var sawTimeout, sawOK bool
	for _, p := range histPoints(t, ms[MetricTTFT]) {
		switch p.attrs["error.type"] {
		case "timeout":
			sawTimeout = true
		case nil:
			sawOK = true
		}
	}
	if !sawTimeout || !sawOK {
		t.Errorf("%s: want points with error.type=timeout and without error.type", MetricTTFT)
	}

	// Token usage histogram and token counter, by gen_ai.token.type.
	usage := map[cellID]map[string]histPoint{}
	for _, p := range histPoints(t, ms[MetricTokenUsage]) {
		id := checkCommon(t, MetricTokenUsage, p.attrs)
		typ, _ := p.attrs["gen_ai.token.type"].(string)
		if usage[id] == nil {
			usage[id] = map[string]histPoint{}
		}
		g := usage[id][typ]
		g.count += p.count
		g.sum += p.sum
		usage[id][typ] = g
	}
	counter := map[cellID]map[string]int64{}
	for _, p := range ms[MetricTokens].GetSum().GetDataPoints() {
		a := attrMap(p.GetAttributes())
		id := checkCommon(t, MetricTokens, a)
		if counter[id] == nil {
			counter[id] = map[string]int64{}
		}
		counter[id][a["gen_ai.token.type"].(string)] += p.GetAsInt()
	}
	if !ms[MetricTokens].GetSum().GetIsMonotonic() {
		t.Errorf("%s is not monotonic", MetricTokens)
	}
	for id, tr := range truths {
		for _, typ := range []string{"input", "output"} {
			key := MetricTokenUsage + "/" + typ
			g := usage[id][typ]
			if g.count != uint64(tr.count[key]) || g.sum != tr.sum[key] {
				t.Errorf("%s %v %s: count %d sum %v, want %d and %v", MetricTokenUsage, id, typ, g.count, g.sum, tr.count[key], tr.sum[key])
			}
			if counter[id][typ] != int64(tr.sum[key]) {
				t.Errorf("%s %v %s = %d, want %v", MetricTokens, id, typ, counter[id][typ], tr.sum[key])
			}
		}
	}

	// Requests by final state and warm-up flag: nothing disappears.
	reqs := map[cellID]map[stateWarmup]int64{}
	for _, p := range ms[MetricRequests].GetSum().GetDataPoints() {
		a := attrMap(p.GetAttributes())
		id := checkCommon(t, MetricRequests, a)
		if reqs[id] == nil {
			reqs[id] = map[stateWarmup]int64{}
		}
		reqs[id][stateWarmup{loadgen.State(a["transferlab.request.state"].(string)), a["transferlab.warmup"].(bool)}] += p.GetAsInt()
	}
	for id, tr := range truths {
		for k, n := range tr.requests {
			if reqs[id][k] != int64(n) {
				t.Errorf("%s %v %+v = %d, want %d", MetricRequests, id, k, reqs[id][k], n)
			}
		}
		if len(reqs[id]) != len(tr.requests) {
			t.Errorf("%s %v: %d state series, want %d", MetricRequests, id, len(reqs[id]), len(tr.requests))
		}
	}

	// GPU gauges: one point per cell with the last value set.
	for _, p := range ms[MetricGPUPower].GetGauge().GetDataPoints() {
		a := attrMap(p.GetAttributes())
		checkCommon(t, MetricGPUPower, a)
		if p.GetAsDouble() != 612.5 || a["transferlab.gpu.index"] != int64(0) {
			t.Errorf("%s point %v = %v, want 612.5 on gpu 0", MetricGPUPower, a, p.GetAsDouble())
		}
	}
	if n := len(ms[MetricGPUPower].GetGauge().GetDataPoints()); n != len(truths) {
		t.Errorf("%s: %d points, want one per cell (%d)", MetricGPUPower, n, len(truths))
	}
	for _, p := range ms[MetricGPUMemoryUsed].GetGauge().GetDataPoints() {
		if p.GetAsInt() != 80<<30 {
			t.Errorf("%s = %d, want %d", MetricGPUMemoryUsed, p.GetAsInt(), int64(80<<30))
		}
	}
}

// TestShutdownBounded: a collector that accepts connections but never
// answers costs at most ShutdownTimeout plus slack, and a warning.
func TestShutdownBounded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rc := newHangingReceiver(t, release)
	const bound = time.Second
	var warn syncBuffer
	cfg := Config{Enabled: true, Endpoint: rc.URL, ShutdownTimeout: bound, MetricInterval: time.Hour}
	ctx := context.Background()
	e, err := Start(ctx, cfg, RunInfo{Name: "hang"}, WithWarnings(&warn))
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := synthCell("baseline", 1, 0, 200)
	c := e.StartCell(ctx, "baseline", 1, 0)
	sink := c.Sink(time.Now())
	addStart := time.Now()
	for _, r := range recs {
		if err := sink.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	addTook := time.Since(addStart)
	c.End()

	began := time.Now()
	err = e.Shutdown(ctx)
	took := time.Since(began)
	close(release)
	// Slack: 4 s over the 1 s bound absorbs a loaded 2-core CI machine
	// (goroutine scheduling, -race); a hung export would take the SDK's
	// 10 s request timeout or its 30 s batch timeout, far beyond it.
	if took > bound+4*time.Second {
		t.Errorf("Shutdown took %v, want at most %v + 4 s slack", took, bound)
	}
	if err == nil || !strings.Contains(err.Error(), "bound 1s") {
		t.Errorf("Shutdown error = %v, want a warning naming the bound", err)
	}
	t.Logf("Shutdown against a silent collector: %v (bound %v); 200 Sink.Add calls: %v; error: %v", took, bound, addTook, err)
	if err2 := e.Shutdown(ctx); err2 != err {
		t.Errorf("second Shutdown = %v, want the first result", err2)
	}
}

// TestShutdownCollectorDown: nothing listens at the endpoint; export fails
// fast and the run sees a warning, not an error or a hang.
func TestShutdownCollectorDown(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	url := rc.srv.URL
	rc.srv.Close() // the port is now closed
	var warn syncBuffer
	ctx := context.Background()
	e, err := Start(ctx, Config{Enabled: true, Endpoint: url, ShutdownTimeout: 2 * time.Second, Timeout: time.Second}, RunInfo{}, WithWarnings(&warn))
	if err != nil {
		t.Fatalf("Start with no collector: %v (it must not contact the collector)", err)
	}
	feedCell(ctx, t, e, 20)
	began := time.Now()
	err = e.Shutdown(ctx)
	if took := time.Since(began); took > 2*time.Second+4*time.Second {
		t.Errorf("Shutdown took %v, want at most the 2 s bound + 4 s slack", took)
	}
	if err == nil {
		t.Error("Shutdown = nil, want a warning that export failed")
	}
	if !strings.Contains(warn.String(), "export failed") {
		t.Errorf("no warning written at the first failure: %q", warn.String())
	}
}

// TestDisabled: export off costs nothing and changes nothing.
func TestDisabled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := Start(ctx, Config{Enabled: false, Endpoint: "http://127.0.0.1:1"}, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Enabled() {
		t.Fatal("Enabled() = true for a disabled config")
	}
	c := e.StartCell(ctx, "baseline", 1, 0)
	sink := c.Sink(time.Now())
	if _, ok := sink.(nopSink); !ok {
		t.Errorf("disabled Sink is %T, want nopSink", sink)
	}
	recs, _ := synthCell("baseline", 1, 0, 5)
	for _, r := range recs {
		if err := sink.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RecordPower(ctx, 0, 500); err != nil {
		t.Fatal(err)
	}
	c.End()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st != (ExportStats{}) {
		t.Errorf("Stats = %+v, want zero", st)
	}
	if _, err := Start(ctx, Config{Enabled: false, Exporter: "zipkin"}, RunInfo{}); err == nil {
		t.Error("a disabled config with a bad exporter passed: typos must be found before export is switched on")
	}
}

func TestNilRecordAndBadSamples(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var out bytes.Buffer
	e, err := Start(ctx, Config{Enabled: true, Exporter: ExporterStdout}, RunInfo{}, WithWriter(&out))
	if err != nil {
		t.Fatal(err)
	}
	c := e.StartCell(ctx, "baseline", 1, 0)
	if err := c.Sink(time.Now()).Add(nil); err == nil {
		t.Error("Add(nil) = nil, want an error")
	}
	for _, w := range []float64{math.NaN(), math.Inf(1), -1} {
		if err := c.RecordPower(ctx, 0, w); err == nil {
			t.Errorf("RecordPower(%v) = nil, want ErrBadSample", w)
		}
	}
	if err := c.RecordVRAM(ctx, 0, -1); err == nil {
		t.Error("RecordVRAM(-1) = nil, want ErrBadSample")
	}
	c.End()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// feedCell feeds n synthetic records of one cell through e and ends the cell.
func feedCell(ctx context.Context, t *testing.T, e *Exporter, n int) {
	t.Helper()
	recs, _ := synthCell("baseline", 1, 0, n)
	c := e.StartCell(ctx, "baseline", 1, 0)
	sink := c.Sink(time.Now())
	for _, r := range recs {
		if err := sink.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	c.End()
}

// TestSinkStart: an explicit start (Sink or SetStart before the first Add)
// is used to the nanosecond; without one, the first Add anchors the spans so
// that its record ends at the wall-clock time of that Add.
func TestSinkStart(t *testing.T) {
	t.Parallel()
	recs, _ := synthCell("baseline", 1, 0, 3)
	r := recs[2] // ok, ends at EndAt
	given := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, tc := range []struct {
		name     string
		sinkAt   time.Time
		setStart time.Time
	}{
		{"given to Sink", given, time.Time{}},
		{"given by SetStart", time.Time{}, given},
		{"SetStart does not override Sink", given, given.Add(time.Hour)},
		{"estimated at first Add", time.Time{}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rc, e := startHealthy(ctx, t)
			c := e.StartCell(ctx, "baseline", 1, 0)
			sink := c.Sink(tc.sinkAt)
			if !tc.setStart.IsZero() {
				sink.(interface{ SetStart(time.Time) }).SetStart(tc.setStart)
			}
			before := time.Now()
			if err := sink.Add(r); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			c.End()
			if err := e.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			var end uint64
			for _, s := range rc.spans() {
				if s.GetKind() == tracepb.Span_SPAN_KIND_CLIENT {
					end = s.GetEndTimeUnixNano()
				}
			}
			if tc.sinkAt.IsZero() && tc.setStart.IsZero() {
				// The estimate puts the record's end at the instant of Add.
				if end < uint64(before.UnixNano()) || end > uint64(after.UnixNano()) {
					t.Errorf("estimated span end %d outside the Add call [%d, %d]", end, before.UnixNano(), after.UnixNano())
				}
				return
			}
			if want := uint64(given.Add(r.EndAt).UnixNano()); end != want {
				t.Errorf("span end %d, want %d", end, want)
			}
		})
	}
}

// TestShutdownContext: an interrupted run (cancelled ctx) still flushes
// everything; a ctx deadline shorter than ShutdownTimeout is honoured.
func TestShutdownContext(t *testing.T) {
	t.Parallel()
	t.Run("cancelled ctx still flushes", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		rc, e := startHealthy(ctx, t)
		feedCell(ctx, t, e, 30)
		cancel() // the first interrupt cancels the run's context
		if err := e.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown after cancel: %v", err)
		}
		if n := len(rc.spans()); n != 1+1+30 {
			t.Errorf("received %d spans after an interrupt, want 32", n)
		}
		if rc.lastMetrics()[MetricRequests] == nil {
			t.Error("no final metric export after an interrupt")
		}
	})
	t.Run("shorter ctx deadline wins", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		srv := newHangingReceiver(t, release)
		defer close(release)
		e, err := Start(context.Background(), Config{Enabled: true, Endpoint: srv.URL, MetricInterval: time.Hour, ShutdownTimeout: time.Minute},
			RunInfo{}, WithWarnings(&syncBuffer{}))
		if err != nil {
			t.Fatal(err)
		}
		feedCell(context.Background(), t, e, 10)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		began := time.Now()
		if err := e.Shutdown(ctx); err == nil {
			t.Error("Shutdown = nil against a silent collector, want a warning")
		}
		// 0.5 s deadline + 4 s slack for a loaded CI machine, far below the 1 min bound.
		if took := time.Since(began); took > 500*time.Millisecond+4*time.Second {
			t.Errorf("Shutdown took %v, want the 0.5 s ctx deadline + slack", took)
		}
	})
}

// TestFlush: Flush delivers a cell's spans and metrics before Shutdown, and
// is bounded against a silent collector like Shutdown.
func TestFlush(t *testing.T) {
	t.Parallel()
	t.Run("healthy collector", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		rc, e := startHealthy(ctx, t)
		feedCell(ctx, t, e, 40)
		if err := e.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if n := len(rc.spans()); n != 1+40 { // cell + requests; the run span ends at Shutdown
			t.Errorf("after Flush the receiver has %d spans, want 41", n)
		}
		if rc.lastMetrics()[MetricRequests] == nil {
			t.Error("after Flush no metrics were received")
		}
		if err := e.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(rc.spans()); n != 1+1+40 {
			t.Errorf("after Shutdown the receiver has %d spans, want 42", n)
		}
	})
	t.Run("silent collector", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		srv := newHangingReceiver(t, release)
		defer close(release)
		ctx := context.Background()
		const bound = time.Second
		e, err := Start(ctx, Config{Enabled: true, Endpoint: srv.URL, MetricInterval: time.Hour, ShutdownTimeout: bound}, RunInfo{}, WithWarnings(&syncBuffer{}))
		if err != nil {
			t.Fatal(err)
		}
		feedCell(ctx, t, e, 10)
		began := time.Now()
		if err := e.Flush(ctx); err == nil {
			t.Error("Flush = nil against a silent collector, want a warning")
		}
		// Slack as in TestShutdownBounded.
		if took := time.Since(began); took > bound+4*time.Second {
			t.Errorf("Flush took %v, want at most %v + 4 s slack", took, bound)
		}
		if err := e.Shutdown(ctx); err == nil {
			t.Error("Shutdown = nil against a silent collector, want a warning")
		}
	})
}

// startHealthy starts an Exporter sending to a new in-process receiver, with
// a shutdown bound generous for a loaded CI machine and metrics exported
// only on Flush and Shutdown.
func startHealthy(ctx context.Context, t *testing.T) (*receiver, *Exporter) {
	t.Helper()
	rc := newReceiver(t)
	e, err := Start(ctx, Config{Enabled: true, Endpoint: rc.srv.URL, MetricInterval: time.Hour, ShutdownTimeout: 30 * time.Second}, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	return rc, e
}

// TestSpanDropsReported: when the span queue overflows (here: a queue of 16
// behind a collector that never answers) the spans lost are counted and
// named in Shutdown's warning; with a healthy collector every span ended is
// handed to the exporter and received.
func TestSpanDropsReported(t *testing.T) {
	t.Parallel()
	t.Run("overflow", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		srv := newHangingReceiver(t, release)
		defer close(release)
		ctx := context.Background()
		e, err := Start(ctx, Config{Enabled: true, Endpoint: srv.URL, MetricInterval: time.Hour, ShutdownTimeout: time.Second},
			RunInfo{}, WithWarnings(&syncBuffer{}), WithSpanQueueSize(16))
		if err != nil {
			t.Fatal(err)
		}
		feedCell(ctx, t, e, 2000)
		err = e.Shutdown(ctx)
		st := e.Stats()
		if st.SpansEnded != 1+1+2000 {
			t.Errorf("SpansEnded = %d, want 2002", st.SpansEnded)
		}
		// The processor gathers up to one batch (512) while no export runs;
		// once that export hangs, only the queue (16) fills and the rest is
		// dropped: at least 2002 − 512 − 16 − 16 are lost, whatever the timing.
		if lost := st.SpansEnded - st.SpansExported; lost < 2002-512-32 {
			t.Errorf("lost %d spans, want ≥ %d with a queue of 16 and a hung collector (stats %+v)", lost, 2002-512-32, st)
		}
		if err == nil || !strings.Contains(err.Error(), "spans never reached the exporter") {
			t.Errorf("Shutdown = %v, want the lost spans reported", err)
		}
	})
	t.Run("AddRecords flushes a cell larger than the queue", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		rc := newReceiver(t)
		// 50 ms an export: a plain Add loop (~30 µs a record) would overflow
		// the 64-span queue many times over while one export is in flight.
		rc.delayNs.Store(int64(50 * time.Millisecond))
		e, err := Start(ctx, Config{Enabled: true, Endpoint: rc.srv.URL, MetricInterval: time.Hour, ShutdownTimeout: 30 * time.Second},
			RunInfo{}, WithSpanQueueSize(64))
		if err != nil {
			t.Fatal(err)
		}
		ptrs, _ := synthCell("baseline", 1, 0, 1000)
		recs := make([]loadgen.Record, len(ptrs))
		for i, r := range ptrs {
			recs[i] = *r
		}
		c := e.StartCell(ctx, "baseline", 1, 0)
		if err := c.AddRecords(ctx, time.Now(), recs); err != nil {
			t.Fatal(err)
		}
		c.End()
		if err := e.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		st := e.Stats()
		t.Logf("stats %+v", st)
		if st.SpansEnded != 1002 || st.SpansExported != 1002 || len(rc.spans()) != 1002 {
			t.Errorf("stats %+v, received %d: want all 1002 spans through a queue of 64", st, len(rc.spans()))
		}
	})
	t.Run("healthy", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		rc, e := startHealthy(ctx, t)
		feedCell(ctx, t, e, 500)
		if err := e.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		st := e.Stats()
		if st.SpansEnded != 502 || st.SpansExported != 502 || int64(len(rc.spans())) != 502 {
			t.Errorf("stats %+v, received %d: want 502 ended, exported and received", st, len(rc.spans()))
		}
	})
}
