// Package telemetry exports what transferlab measures through OpenTelemetry,
// so a run shows up in the tracing and metrics backends rollout owners already
// watch (Grafana/Tempo/Prometheus, Jaeger, a vendor's OTLP endpoint).
//
// It owns: the `otel:` config section (Config), the trace and meter providers
// of one run (Exporter), a span per run, a span per cell (Cell) and a span per
// request, rebuilt from each loadgen.Record after the request has finished
// (Cell.Sink), the latency/token/state instruments fed from the same records,
// and the GPU power and VRAM gauges fed by whoever samples the GPU
// (Cell.RecordGPU). Names follow the OpenTelemetry GenAI semantic conventions
// v1.41.0 where they define one and use a `transferlab.` prefix otherwise;
// README.md has the full table.
//
// Export is a side channel and never part of the measurement: spans leave
// through a batching span processor (a full queue drops spans, it never
// blocks Sink.Add), metrics through a periodic reader, and Shutdown is bounded
// by Config.ShutdownTimeout (default 5 s). records.jsonl, results.json and
// every reported figure are computed elsewhere and do not depend on export
// succeeding.
//
// It does not know: how records were measured (loadgen does; metric formulas
// are DESIGN.md's, applied to the record's fields), which server ran, how the
// GPU was sampled (energy does; this package takes plain numbers), or any
// statistic beyond what an OTel histogram aggregates. It sets no OpenTelemetry
// globals (no otel.SetTracerProvider): every provider it makes is owned by the
// Exporter and shut down by it.
package telemetry
