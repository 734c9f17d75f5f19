package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
			for i := 0; b.Loop(); i++ {
				if err := s.Add(recs[i%len(recs)]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			c.End()
			if err := e.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}
