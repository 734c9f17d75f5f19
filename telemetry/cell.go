package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/transferlab/transferlab/loadgen"
)

// Cell is one arm × offered load × repetition: a span under the run's root
// span, parent of one span per request, and the label set of the metrics its
// records feed. Methods on a nil *Cell or on a Cell of a disabled Exporter do
// nothing.
type Cell struct {
	e   *Exporter
	rep int

	ctx  context.Context
	span trace.Span

	// base are the metric attributes every point of this cell carries.
	base []attribute.KeyValue
	// states holds the precomputed measurement options of each known state,
	// read-only after StartCell.
	states map[loadgen.State]*stateOpts
	// perRecord pairs each one-value-per-request histogram with the
	// loadgen.Record method that defines its value.
	perRecord []recordMetric
	// spanName is "{gen_ai.operation.name} {gen_ai.request.model}".
	spanName string

	mu     sync.Mutex
	counts map[loadgen.State]int
	ended  bool
}

// recordMetric is a histogram fed one value per record, in seconds.
type recordMetric struct {
	h     metric.Float64Histogram
	value func(*loadgen.Record) (time.Duration, bool)
}

// recordMetrics lists the per-request histograms with the loadgen.Record
// method (DESIGN.md's formula) that gives each its value; ITL, several values
// per record, is recorded apart.
func recordMetrics(in *instruments) []recordMetric {
	return []recordMetric{
		{in.scheduleLag, (*loadgen.Record).ScheduleLag},
		{in.timeToFirstChunk, (*loadgen.Record).FirstMessage},
		{in.ttft, (*loadgen.Record).TTFT},
		{in.ttftIntended, (*loadgen.Record).TTFTIntended},
		{in.ttfo, (*loadgen.Record).TTFO},
		{in.operationDuration, (*loadgen.Record).E2E},
		{in.tpot, (*loadgen.Record).TPOT},
	}
}

// stateOpts are the measurement options of one final state.
type stateOpts struct {
	latency        metric.MeasurementOption // base + error.type when not ok
	input, output  metric.MeasurementOption // latency + gen_ai.token.type
	requests       metric.MeasurementOption // base + state, warmup false
	requestsWarmup metric.MeasurementOption // base + state, warmup true
}

// CellOption changes how StartCell opens a cell.
type CellOption func(*cellOptions)

type cellOptions struct{ start time.Time }

// CellStartedAt sets the cell span's start time (default: when StartCell is
// called). Use it when a cell's records are exported after the cell ran, with
// the replay's start (loadgen.Summary.Start), so the cell span encloses its
// request spans; end it with EndAt.
func CellStartedAt(t time.Time) CellOption { return func(o *cellOptions) { o.start = t } }

// StartCell opens the span of one cell under the run's root span (at the
// current time, or CellStartedAt's: call it before replaying the cell and End
// after, or use CellStartedAt and EndAt when exporting afterwards) and returns the
// Cell whose Sink turns records into spans and metric points labelled with
// arm (transferlab.arm), offered load in requests per second
// (transferlab.offered_load_rps) and repetition (spans only). ctx's values
// are kept, its cancellation is not.
func (e *Exporter) StartCell(ctx context.Context, arm string, offeredLoadRPS float64, rep int, opts ...CellOption) *Cell {
	if !e.Enabled() {
		return &Cell{}
	}
	c := &Cell{e: e, rep: rep, counts: map[loadgen.State]int{}}
	c.base = []attribute.KeyValue{
		AttrOperationName.String(e.run.Operation),
		AttrProviderName.String(e.run.Provider),
		AttrArm.String(arm),
		AttrOfferedLoadRPS.Float64(offeredLoadRPS),
		AttrSimulated.Bool(e.run.Simulated),
	}
	c.perRecord = recordMetrics(&e.inst)
	c.spanName = e.run.Operation
	if e.run.Model != "" {
		c.base = append(c.base, AttrRequestModel.String(e.run.Model))
		c.spanName += " " + e.run.Model
	}
	c.states = make(map[loadgen.State]*stateOpts, len(loadgen.States))
	for _, s := range loadgen.States {
		c.states[s] = c.newStateOpts(s)
	}
	var o cellOptions
	for _, opt := range opts {
		opt(&o)
	}
	spanOpts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	if !o.start.IsZero() {
		spanOpts = append(spanOpts, trace.WithTimestamp(o.start))
	}
	parent := trace.ContextWithSpan(context.WithoutCancel(ctx), e.root)
	c.ctx, c.span = e.tracer.Start(parent, SpanCell, append(spanOpts, trace.WithAttributes(
		AttrArm.String(arm), AttrOfferedLoadRPS.Float64(offeredLoadRPS), AttrRepetition.Int(rep), AttrSimulated.Bool(e.run.Simulated)))...)
	return c
}

func (c *Cell) newStateOpts(s loadgen.State) *stateOpts {
	lat := c.base[:len(c.base):len(c.base)]
	if s != loadgen.StateOK {
		lat = append(lat, AttrErrorType.String(string(s)))
	}
	with := func(extra ...attribute.KeyValue) metric.MeasurementOption {
		kv := append(lat[:len(lat):len(lat)], extra...)
		return metric.WithAttributeSet(attribute.NewSet(kv...))
	}
	req := func(warmup bool) metric.MeasurementOption {
		kv := append(c.base[:len(c.base):len(c.base)], AttrState.String(string(s)), AttrWarmup.Bool(warmup))
		return metric.WithAttributeSet(attribute.NewSet(kv...))
	}
	return &stateOpts{
		latency:        with(),
		input:          with(AttrTokenType.String("input")),
		output:         with(AttrTokenType.String("output")),
		requests:       req(false),
		requestsWarmup: req(true),
	}
}

// Sink returns a loadgen.Sink that turns every Record added to it into one
// span (child of the cell's span) and the metric points of README.md.
// start is the wall-clock time the records' offsets count from (the
// replay's time zero, loadgen.Summary.Start); span timestamps are start plus
// the record's offsets, exact to the nanosecond. Replay fixes its start only
// after the server is ready, so start may be the zero time.Time: then
// SetStart, called before the first Add, sets it, and failing that the first
// Add estimates it as its own wall-clock time minus the record's end offset
// (early by the delay between the request's end and Add, typically
// microseconds; every span of the sink shares that one estimate).
// Add never blocks on export and returns an error only for a nil record;
// Close does nothing (End closes the cell, Exporter.Shutdown flushes).
// Warm-up records get a span and count in transferlab.client.requests
// (transferlab.warmup=true) but feed no latency or token metric, as they are
// outside the measured window.
func (c *Cell) Sink(start time.Time) loadgen.Sink {
	if c == nil || c.e == nil {
		return nopSink{}
	}
	return &cellSink{c: c, start: start}
}

// AddRecords is Sink(start).Add for every record of a cell that has already
// run (the after-the-cell path): it flushes the span queue after every half
// queue of records, so a cell larger than the queue loses no span to a full
// queue. Once a flush fails (collector down or slow, at most one
// Config.ShutdownTimeout spent) it stops flushing and the rest may be dropped,
// counted and reported by Shutdown. A non-nil error is a warning.
func (c *Cell) AddRecords(ctx context.Context, start time.Time, recs []loadgen.Record) error {
	if c == nil || c.e == nil {
		return nil
	}
	sink := c.Sink(start)
	chunk := max(1, c.e.queueSize/2)
	var flushErr error
	for i := range recs {
		if err := sink.Add(&recs[i]); err != nil {
			return err
		}
		if (i+1)%chunk == 0 && i+1 < len(recs) && flushErr == nil {
			flushErr = c.e.flushSpans(ctx)
		}
	}
	return flushErr
}

// End ends the cell's span now, with the number of records seen in each
// final state as transferlab.requests.<state> attributes. Later calls (of End
// or EndAt) do nothing.
func (c *Cell) End() { c.EndAt(time.Time{}) }

// EndAt is End at time t (the zero time: now), for cells exported after they
// ran (see CellStartedAt).
func (c *Cell) EndAt(t time.Time) {
	if c == nil || c.e == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.ended = true
	for _, s := range loadgen.States {
		c.span.SetAttributes(attribute.Int("transferlab.requests."+string(s), c.counts[s]))
	}
	if t.IsZero() {
		c.span.End()
		return
	}
	c.span.End(trace.WithTimestamp(t))
}

// ErrBadSample is returned by RecordPower and RecordVRAM for a value that is
// NaN, infinite or negative; nothing is recorded.
var ErrBadSample = errors.New("telemetry: bad GPU sample")

// RecordPower sets the transferlab.gpu.power gauge of GPU gpu (its index,
// transferlab.gpu.index) to powerW, the GPU-reported board power in watts,
// labelled with the cell's arm and offered load. Call it from the energy
// sampler's samples; the exported value is the last one set before each
// export.
func (c *Cell) RecordPower(ctx context.Context, gpu int, powerW float64) error {
	if c == nil || c.e == nil {
		return nil
	}
	if math.IsNaN(powerW) || math.IsInf(powerW, 0) || powerW < 0 {
		return fmt.Errorf("%w: power_w %v of gpu %d", ErrBadSample, powerW, gpu)
	}
	c.e.inst.gpuPower.Record(ctx, powerW, metric.WithAttributes(c.gpuAttrs(gpu)...))
	return nil
}

// RecordVRAM sets the transferlab.gpu.memory.used gauge of GPU gpu to
// usedBytes, the GPU memory in use in bytes, labelled like RecordPower.
func (c *Cell) RecordVRAM(ctx context.Context, gpu int, usedBytes int64) error {
	if c == nil || c.e == nil {
		return nil
	}
	if usedBytes < 0 {
		return fmt.Errorf("%w: vram_bytes %d of gpu %d", ErrBadSample, usedBytes, gpu)
	}
	c.e.inst.gpuMemoryUsed.Record(ctx, usedBytes, metric.WithAttributes(c.gpuAttrs(gpu)...))
	return nil
}

func (c *Cell) gpuAttrs(gpu int) []attribute.KeyValue {
	return append(c.base[:len(c.base):len(c.base)], AttrGPUIndex.Int(gpu))
}

// cellSink is the Sink of one Cell.
type cellSink struct {
	c *Cell

	mu    sync.Mutex
	start time.Time // zero until known
}

// SetStart sets the wall-clock time the records' offsets count from, if no
// record has been added yet; later calls and calls after the first Add do
// nothing, so every span of the sink shares one time base.
func (s *cellSink) SetStart(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.start.IsZero() {
		s.start = t
	}
}

// anchor returns the time base, estimating it from r on first use when
// neither Sink nor SetStart gave one.
func (s *cellSink) anchor(r *loadgen.Record) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.start.IsZero() {
		_, end := spanTimes(r)
		s.start = time.Now().Add(-end)
	}
	return s.start
}

// nopSink is the Sink of a disabled Exporter.
type nopSink struct{}

func (nopSink) Add(*loadgen.Record) error { return nil }
func (nopSink) Close() error              { return nil }

var (
	_ loadgen.Sink = (*cellSink)(nil)
	_ loadgen.Sink = nopSink{}
)

// Close does nothing: the cell's span ends with Cell.End and export is
// flushed by Exporter.Shutdown.
func (s *cellSink) Close() error { return nil }

// Add records r as a span and metric points. It does no I/O.
func (s *cellSink) Add(r *loadgen.Record) error {
	if r == nil {
		return errors.New("telemetry: sink: nil record")
	}
	c := s.c
	opts := c.states[r.State]
	if opts == nil { // a state loadgen does not list: label it anyway
		opts = c.newStateOpts(r.State)
	}
	c.mu.Lock()
	c.counts[r.State]++
	c.mu.Unlock()

	ctx := c.span1(s.anchor(r), r)
	in := &c.e.inst
	if r.Warmup {
		in.requests.Add(ctx, 1, opts.requestsWarmup)
		return nil
	}
	in.requests.Add(ctx, 1, opts.requests)
	for _, m := range c.perRecord {
		if d, ok := m.value(r); ok {
			m.h.Record(ctx, d.Seconds(), opts.latency)
		}
	}
	for _, itl := range r.ITLs() {
		in.timePerChunk.Record(ctx, itl.Seconds(), opts.latency)
	}
	if r.State != loadgen.StateNotSent {
		nin, nout := int64(inputTokens(r)), int64(r.OutputTokens)
		in.tokenUsage.Record(ctx, nin, opts.input)
		in.tokenUsage.Record(ctx, nout, opts.output)
		in.tokens.Add(ctx, nin, opts.input)
		in.tokens.Add(ctx, nout, opts.output)
	}
	return nil
}

// span1 emits the span of one record and returns a context carrying it, so
// metric points recorded with it can keep the span as an exemplar.
func (c *Cell) span1(start time.Time, r *loadgen.Record) context.Context {
	from, to := spanTimes(r)
	attrs := make([]attribute.KeyValue, 0, 24)
	attrs = append(attrs, c.base...)
	attrs = append(attrs,
		AttrRepetition.Int(c.rep),
		AttrRequestID.Int(r.RequestID),
		AttrSourceLine.Int(r.SourceLine),
		AttrState.String(string(r.State)),
		AttrWarmup.Bool(r.Warmup),
		AttrStream.Bool(true),
		AttrMaxTokens.Int(r.RequestedOutputTokens),
		AttrInputTokens.Int(inputTokens(r)),
		AttrOutputTokens.Int(r.OutputTokens),
	)
	if r.OutputTokensSource != "" {
		attrs = append(attrs, AttrOutputSource.String(r.OutputTokensSource), AttrUsageMismatch.Bool(r.UsageMismatch))
	}
	if d, ok := r.ScheduleLag(); ok {
		attrs = append(attrs, AttrScheduleLagS.Float64(d.Seconds()))
	}
	if d, ok := r.FirstMessage(); ok {
		attrs = append(attrs, AttrTimeToFirstChunk.Float64(d.Seconds()))
	}
	if r.FinishReason != "" {
		attrs = append(attrs, AttrFinishReasons.StringSlice([]string{r.FinishReason}))
	}
	if r.HTTPStatus != 0 {
		attrs = append(attrs, AttrHTTPStatus.Int(r.HTTPStatus))
	}
	if r.State != loadgen.StateOK {
		attrs = append(attrs, AttrErrorType.String(string(r.State)))
	}
	ctx, span := c.e.tracer.Start(c.ctx, c.spanName,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start.Add(from)), trace.WithAttributes(attrs...))
	if n := len(r.Events); n > 0 {
		first := r.Events[0]
		span.AddEvent(EventFirstToken, trace.WithTimestamp(start.Add(first.At)),
			trace.WithAttributes(AttrEventTokens.Int(first.Tokens), attribute.Bool("transferlab.event.reasoning", first.Reasoning)))
		if first.Reasoning {
			for _, ev := range r.Events[1:] {
				if !ev.Reasoning {
					span.AddEvent(EventFirstAnswerToken, trace.WithTimestamp(start.Add(ev.At)), trace.WithAttributes(AttrEventTokens.Int(ev.Tokens)))
					break
				}
			}
		}
	}
	span.AddEvent(EventEnd, trace.WithTimestamp(start.Add(to)), trace.WithAttributes(AttrState.String(string(r.State))))
	if r.State != loadgen.StateOK {
		msg := string(r.State)
		if r.Error != "" {
			msg += ": " + r.Error
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End(trace.WithTimestamp(start.Add(to)))
	return ctx
}
