package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSinkAdd measures what Sink.Add costs the loadgen collector per
// finished request: one span built and queued for the batching processor,
// ~15 metric points aggregated. The export itself runs on the SDK's
// goroutines; with few cores it competes for CPU, so the figure includes
// that share too. Spans go to an in-process OTLP/HTTP collector that
// discards them, or to a discarding stdout exporter (JSON encoding).
func BenchmarkSinkAdd(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	for _, bc := range []struct {
		name string
		cfg  Config
	}{
		{"otlp-http", Config{Enabled: true, Exporter: ExporterOTLPHTTP, Endpoint: sink.URL, MetricInterval: time.Hour}},
		{"stdout", Config{Enabled: true, Exporter: ExporterStdout, MetricInterval: time.Hour}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			e, err := Start(ctx, bc.cfg, RunInfo{Model: "m"}, WithWriter(io.Discard), WithSpanQueueSize(1<<16))
			if err != nil {
				b.Fatal(err)
			}
			recs, _ := synthCell("baseline", 1, 0, 1000)
			c := e.StartCell(ctx, "baseline", 1, 0)
			s := c.Sink(time.Now())
			b.ReportAllocs()
			cpu0 := processCPU(b)
			n := 0
			for ; b.Loop(); n++ {
				if err := s.Add(recs[n%len(recs)]); err != nil {
					b.Fatal(err)
				}
			}
			// Process CPU time (user+sys, every goroutine: Add and the export
			// it causes) per Add; unlike ns/op it does not grow when a loaded
			// host hands this process less of its cores.
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(n), "cpu-ns/op")
			b.StopTimer()
			c.End()
			if err := e.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// processCPU is the process's user+sys CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
