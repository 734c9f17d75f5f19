package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of the Options.
const (
	// DefaultSpanQueueSize is how many finished spans may wait for export
	// before new ones are dropped (never blocking Sink.Add): 8192 spans,
	// each holding its ~25 attributes and 2–3 events (a few KiB), more than
	// the largest quickstart cell.
	DefaultSpanQueueSize = 8192
	// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or
	// OTEL_RESOURCE_ATTRIBUTES set one.
	DefaultServiceName = "transferlab"
)

// OperationTextCompletion is the default gen_ai.operation.name: loadgen sends
// /v1/completions requests with a token-id prompt.
const OperationTextCompletion = "text_completion"

// RunInfo names the run on the root span and labels every span and metric.
type RunInfo struct {
	// Name is the experiment's name (transferlab.run.name).
	Name string
	// ConfigSHA256 is the hex SHA-256 of the config file (transferlab.config.sha256).
	ConfigSHA256 string
	// Model is the served model's name (gen_ai.request.model).
	Model string
	// Simulated is true when the server is the embedded simulator
	// (transferlab.simulated, on every span and metric point).
	Simulated bool
	// Provider is gen_ai.provider.name. "": "transferlab.sim" when
	// Simulated, else "openai_compatible" (the conventions allow custom values
	// when no listed provider applies, and a self-hosted server is none of them).
	Provider string
	// Operation is gen_ai.operation.name. "": OperationTextCompletion.
	Operation string
}

func (r RunInfo) effective() RunInfo {
	if r.Provider == "" {
		r.Provider = "openai_compatible"
		if r.Simulated {
			r.Provider = "transferlab.sim"
		}
	}
	if r.Operation == "" {
		r.Operation = OperationTextCompletion
	}
	return r
}

// Option changes how Start builds the exporter.
type Option func(*options)

type options struct {
	writer      io.Writer
	warn        io.Writer
	queueSize   int
	serviceName string
}

// WithWriter sets where the stdout exporter writes JSON. Default os.Stderr,
// so the CLI's own tables on stdout stay clean.
func WithWriter(w io.Writer) Option { return func(o *options) { o.writer = w } }

// WithWarnings sets where export warnings go: the first failed export of
// each signal is reported at once, later failures are counted and summed up
// by Shutdown's error. Default os.Stderr.
func WithWarnings(w io.Writer) Option { return func(o *options) { o.warn = w } }

// WithSpanQueueSize sets how many finished spans may wait for export before
// new ones are dropped. Default DefaultSpanQueueSize.
func WithSpanQueueSize(n int) Option { return func(o *options) { o.queueSize = n } }

// ExportStats counts export calls made so far, by signal. A failed export
// lost that batch from the backend only; nothing measured depends on it.
type ExportStats struct {
	// SpansEnded counts spans finished (run, cells, requests).
	SpansEnded int64
	// SpansExported counts spans handed to the exporter, delivered or not;
	// SpansEnded − SpansExported were dropped because the queue was full or
	// were still queued when Shutdown's bound passed.
	SpansExported        int64
	SpanExports          int64
	SpanExportFailures   int64
	MetricExports        int64
	MetricExportFailures int64
}

// Exporter owns the trace and meter providers of one run and its root span.
// Its methods are safe for concurrent use. A disabled Exporter (Config.Enabled
// false) does nothing and costs nothing.
type Exporter struct {
	enabled   bool
	cfg       Config
	run       RunInfo
	queueSize int

	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	tracer trace.Tracer
	inst   instruments

	rootCtx context.Context
	root    trace.Span

	// abort cancels every export still running once Shutdown's deadline
	// passes, so nothing outlives the bound by more than a return.
	abortCtx context.Context
	abort    context.CancelFunc
	spans    exportCounter
	metrics  exportCounter
	// spansEnded counts spans given to the batching processor.
	spansEnded atomic.Int64

	shutdownOnce sync.Once
	shutdownErr  error
}

// Start builds the exporters and providers described by cfg and opens the
// run's root span. With cfg.Enabled false it validates cfg and returns a
// disabled Exporter. It never contacts the collector: an unreachable one shows
// up as warnings, never as an error here. Errors name the config field.
func Start(ctx context.Context, cfg Config, run RunInfo, opts ...Option) (*Exporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if !cfg.Enabled {
		return &Exporter{}, nil
	}
	o := options{writer: os.Stderr, warn: os.Stderr, queueSize: DefaultSpanQueueSize, serviceName: DefaultServiceName}
	for _, opt := range opts {
		opt(&o)
	}
	if o.queueSize <= 0 {
		return nil, fmt.Errorf("telemetry: span queue size %d: must be positive", o.queueSize)
	}
	cfg = cfg.Effective()
	run = run.effective()

	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(o.serviceName)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource (OTEL_RESOURCE_ATTRIBUTES?): %w", err)
	}

	e := &Exporter{enabled: true, cfg: cfg, run: run, queueSize: o.queueSize}
	e.abortCtx, e.abort = context.WithCancel(context.WithoutCancel(ctx))
	warn := &lockedWriter{w: o.warn}
	e.spans.signal, e.spans.warn = "span", warn
	e.metrics.signal, e.metrics.warn = "metric", warn

	spanExp, metricExp, err := newExporters(ctx, cfg, &lockedWriter{w: o.writer})
	if err != nil {
		e.abort()
		return nil, err
	}
	bspOpts := []sdktrace.BatchSpanProcessorOption{sdktrace.WithMaxQueueSize(o.queueSize)}
	readerOpts := []sdkmetric.PeriodicReaderOption{}
	if cfg.Timeout > 0 {
		bspOpts = append(bspOpts, sdktrace.WithExportTimeout(cfg.Timeout))
		readerOpts = append(readerOpts, sdkmetric.WithTimeout(cfg.Timeout))
	}
	if cfg.MetricInterval > 0 {
		readerOpts = append(readerOpts, sdkmetric.WithInterval(cfg.MetricInterval))
	}
	e.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(&countingProcessor{
			SpanProcessor: sdktrace.NewBatchSpanProcessor(&spanExporter{SpanExporter: spanExp, abort: e.abortCtx, count: &e.spans}, bspOpts...),
			ended:         &e.spansEnded,
		}),
	)
	mpOpts := []sdkmetric.Option{
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(&metricExporter{Exporter: metricExp, abort: e.abortCtx, count: &e.metrics}, readerOpts...)),
	}
	if cfg.Histogram == HistogramExponential {
		mpOpts = append(mpOpts, sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}},
		)))
	}
	e.mp = sdkmetric.NewMeterProvider(mpOpts...)

	e.tracer = e.tp.Tracer(InstrumentationName, trace.WithSchemaURL(semconv.SchemaURL))
	meter := e.mp.Meter(InstrumentationName, metric.WithSchemaURL(semconv.SchemaURL))
	if e.inst, err = newInstruments(meter); err != nil {
		e.abort()
		return nil, errors.Join(err, e.tp.Shutdown(ctx), e.mp.Shutdown(ctx))
	}

	rootAttrs := []attribute.KeyValue{
		AttrRunName.String(run.Name),
		AttrConfigSHA256.String(run.ConfigSHA256),
		AttrSimulated.Bool(run.Simulated),
		AttrOperationName.String(run.Operation),
		AttrProviderName.String(run.Provider),
	}
	if run.Model != "" {
		rootAttrs = append(rootAttrs, AttrRequestModel.String(run.Model))
	}
	e.rootCtx, e.root = e.tracer.Start(context.WithoutCancel(ctx), SpanRun,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(rootAttrs...))
	return e, nil
}

// newExporters builds the span and metric exporters of cfg.Exporter. Fields
// left empty are not passed, so the SDK reads the OTEL_EXPORTER_OTLP_*
// environment variables for them.
func newExporters(ctx context.Context, cfg Config, w io.Writer) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	switch cfg.Exporter {
	case ExporterStdout:
		se, err := stdouttrace.New(stdouttrace.WithWriter(w))
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: otel.exporter stdout: %w", err)
		}
		me, err := stdoutmetric.New(stdoutmetric.WithWriter(w))
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: otel.exporter stdout: %w", err)
		}
		return se, me, nil
	case ExporterOTLPHTTP:
		var topts []otlptracehttp.Option
		var mopts []otlpmetrichttp.Option
		if cfg.Endpoint != "" {
			base, err := url.Parse(cfg.Endpoint)
			if err != nil { // Validate has checked it; kept for safety
				return nil, nil, fmt.Errorf("telemetry: otel.endpoint %q: %w", cfg.Endpoint, err)
			}
			topts = append(topts, otlptracehttp.WithEndpointURL(signalURL(base, "v1/traces")))
			mopts = append(mopts, otlpmetrichttp.WithEndpointURL(signalURL(base, "v1/metrics")))
		}
		if cfg.Insecure {
			topts = append(topts, otlptracehttp.WithInsecure())
			mopts = append(mopts, otlpmetrichttp.WithInsecure())
		}
		if len(cfg.Headers) > 0 {
			topts = append(topts, otlptracehttp.WithHeaders(cfg.Headers))
			mopts = append(mopts, otlpmetrichttp.WithHeaders(cfg.Headers))
		}
		if cfg.Timeout > 0 {
			topts = append(topts, otlptracehttp.WithTimeout(cfg.Timeout))
			mopts = append(mopts, otlpmetrichttp.WithTimeout(cfg.Timeout))
		}
		se, err := otlptracehttp.New(ctx, topts...)
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: otel.exporter otlp-http (traces): %w", err)
		}
		me, err := otlpmetrichttp.New(ctx, mopts...)
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("telemetry: otel.exporter otlp-http (metrics): %w", err), se.Shutdown(ctx))
		}
		return se, me, nil
	case ExporterOTLPGRPC:
		var topts []otlptracegrpc.Option
		var mopts []otlpmetricgrpc.Option
		if cfg.Endpoint != "" {
			topts = append(topts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
			mopts = append(mopts, otlpmetricgrpc.WithEndpointURL(cfg.Endpoint))
		}
		if cfg.Insecure {
			topts = append(topts, otlptracegrpc.WithInsecure())
			mopts = append(mopts, otlpmetricgrpc.WithInsecure())
		}
		if len(cfg.Headers) > 0 {
			topts = append(topts, otlptracegrpc.WithHeaders(cfg.Headers))
			mopts = append(mopts, otlpmetricgrpc.WithHeaders(cfg.Headers))
		}
		if cfg.Timeout > 0 {
			topts = append(topts, otlptracegrpc.WithTimeout(cfg.Timeout))
			mopts = append(mopts, otlpmetricgrpc.WithTimeout(cfg.Timeout))
		}
		se, err := otlptracegrpc.New(ctx, topts...)
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: otel.exporter otlp-grpc (traces): %w", err)
		}
		me, err := otlpmetricgrpc.New(ctx, mopts...)
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("telemetry: otel.exporter otlp-grpc (metrics): %w", err), se.Shutdown(ctx))
		}
		return se, me, nil
	}
	return nil, nil, fmt.Errorf("telemetry: otel.exporter %q: unknown", cfg.Exporter)
}

// signalURL appends the signal path to the base endpoint's path, as the SDK
// does for OTEL_EXPORTER_OTLP_ENDPOINT.
func signalURL(base *url.URL, signal string) string {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + signal
	return u.String()
}

// Enabled reports whether e exports anything.
func (e *Exporter) Enabled() bool { return e != nil && e.enabled }

// Stats returns the export counts so far (zero for a disabled Exporter).
func (e *Exporter) Stats() ExportStats {
	if !e.Enabled() {
		return ExportStats{}
	}
	return ExportStats{
		SpansEnded: e.spansEnded.Load(), SpansExported: e.spans.items.Load(),
		SpanExports: e.spans.calls.Load(), SpanExportFailures: e.spans.failures.Load(),
		MetricExports: e.metrics.calls.Load(), MetricExportFailures: e.metrics.failures.Load(),
	}
}

// Flush exports every span queued so far and the metrics as they stand,
// within Config.ShutdownTimeout (or ctx's earlier deadline; ctx's
// cancellation is ignored). Call it between cells so the export of one cell
// does not run on the CPU while the next one is measured. A non-nil error is
// a warning, like Shutdown's; the Exporter stays usable. Exports still running
// when the bound passes carry on in the background under their own timeout.
func (e *Exporter) Flush(ctx context.Context) error {
	if !e.Enabled() {
		return nil
	}
	fctx, cancel := e.bounded(ctx)
	defer cancel()
	var terr, merr error
	var wg sync.WaitGroup
	wg.Go(func() { terr = e.tp.ForceFlush(fctx) })
	wg.Go(func() { merr = e.mp.ForceFlush(fctx) })
	wg.Wait()
	if err := joinSignals(terr, merr); err != nil {
		return fmt.Errorf("telemetry: flush (%s exporter, bound %v): %w", e.cfg.Exporter, e.cfg.ShutdownTimeout, err)
	}
	return nil
}

// flushSpans pushes the span queue out within the Flush bound.
func (e *Exporter) flushSpans(ctx context.Context) error {
	fctx, cancel := e.bounded(ctx)
	defer cancel()
	if err := e.tp.ForceFlush(fctx); err != nil {
		return fmt.Errorf("telemetry: span flush (%s exporter, bound %v): %w", e.cfg.Exporter, e.cfg.ShutdownTimeout, err)
	}
	return nil
}

// bounded derives a context that ignores ctx's cancellation but keeps its
// deadline, and ends after Config.ShutdownTimeout at the latest.
func (e *Exporter) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.ShutdownTimeout)
	if dl, ok := ctx.Deadline(); ok {
		dctx, cancel2 := context.WithDeadline(bctx, dl)
		return dctx, func() { cancel2(); cancel() }
	}
	return bctx, cancel
}

// joinSignals names each signal's error.
func joinSignals(spanErr, metricErr error) error {
	var errs []error
	if spanErr != nil {
		errs = append(errs, fmt.Errorf("spans: %w", spanErr))
	}
	if metricErr != nil {
		errs = append(errs, fmt.Errorf("metrics: %w", metricErr))
	}
	return errors.Join(errs...)
}

// Shutdown ends the root span, flushes the spans still queued, exports the
// metrics a last time and closes the exporters. It returns within
// Config.ShutdownTimeout (default 5 s) plus scheduling slack, whatever the
// collector does: flush and final export run side by side under one deadline,
// and exports still running when it passes are cancelled. It ignores the
// cancellation of ctx (an interrupted run still flushes) but not its deadline.
// A non-nil error is a warning to print: it says what did not reach the
// collector and must not fail the run. Later calls return the first result.
func (e *Exporter) Shutdown(ctx context.Context) error {
	if !e.Enabled() {
		return nil
	}
	e.shutdownOnce.Do(func() {
		e.root.End()
		sctx, cancel := e.bounded(ctx)
		defer cancel()
		stop := context.AfterFunc(sctx, e.abort)
		defer stop()
		defer e.abort()

		var terr, merr error
		var wg sync.WaitGroup
		wg.Go(func() { terr = e.tp.Shutdown(sctx) })
		wg.Go(func() { merr = e.mp.Shutdown(sctx) })
		wg.Wait()

		var lost error
		if ended := e.spansEnded.Load(); ended > e.spans.items.Load() {
			lost = fmt.Errorf("%d of %d spans never reached the exporter (span queue of %d full, or still queued at the bound); raise WithSpanQueueSize or Flush between cells",
				ended-e.spans.items.Load(), ended, e.queueSize)
		}
		if err := errors.Join(joinSignals(terr, merr), lost, e.spans.summary(), e.metrics.summary()); err != nil {
			e.shutdownErr = fmt.Errorf("telemetry: shutdown (%s exporter, bound %v): %w", e.cfg.Exporter, e.cfg.ShutdownTimeout, err)
		}
	})
	return e.shutdownErr
}

// lockedWriter serialises the writes of both signals' exporters (stdout
// output, warnings) so their lines do not interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// countingProcessor counts the spans that end before passing them on.
type countingProcessor struct {
	sdktrace.SpanProcessor
	ended *atomic.Int64
}

func (p *countingProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	p.ended.Add(1)
	p.SpanProcessor.OnEnd(s)
}

// exportCounter counts exports of one signal and warns once, at the first failure.
type exportCounter struct {
	signal   string
	warn     io.Writer
	calls    atomic.Int64
	failures atomic.Int64
	items    atomic.Int64 // spans handed to the exporter (span signal only)
	mu       sync.Mutex
	firstErr error
}

// observe counts one export and swallows its error after counting it, so
// the SDK does not log every failed batch through the global error handler.
func (c *exportCounter) observe(err error) error {
	c.calls.Add(1)
	if err == nil {
		return nil
	}
	c.failures.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstErr == nil {
		c.firstErr = err
		fmt.Fprintf(c.warn, "transferlab: warning: telemetry %s export failed (measurement unaffected; further failures are counted and reported at shutdown): %v\n", c.signal, err)
	}
	return nil
}

// summary is nil when no export failed, else how many failed and the first error.
func (c *exportCounter) summary() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstErr == nil {
		return nil
	}
	return fmt.Errorf("%d of %d %s exports failed, first: %w", c.failures.Load(), c.calls.Load(), c.signal, c.firstErr)
}

// spanExporter cancels exports once abort is done and counts outcomes.
type spanExporter struct {
	sdktrace.SpanExporter
	abort context.Context
	count *exportCounter
}

func (s *spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.abort, cancel)()
	s.count.items.Add(int64(len(spans)))
	return s.count.observe(s.SpanExporter.ExportSpans(ctx, spans))
}

// metricExporter cancels exports once abort is done and counts outcomes.
type metricExporter struct {
	sdkmetric.Exporter
	abort context.Context
	count *exportCounter
}

func (m *metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.abort, cancel)()
	return m.count.observe(m.Exporter.Export(ctx, rm))
}

var (
	_ sdktrace.SpanProcessor = (*countingProcessor)(nil)
	_ sdktrace.SpanExporter  = (*spanExporter)(nil)
	_ sdkmetric.Exporter     = (*metricExporter)(nil)
)
