package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestSemconvNames pins our GenAI metric names and units to the generated
// semantic-conventions package of SemconvVersion, so a typo or a rename in
// a later release shows up here.
func TestSemconvNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ours, unit string
		conv       interface {
			Name() string
			Unit() string
		}
	}{
		{MetricOperationDuration, "s", genaiconv.ClientOperationDuration{}},
		{MetricTimeToFirstChunk, "s", genaiconv.ClientOperationTimeToFirstChunk{}},
		{MetricTimePerOutputChunk, "s", genaiconv.ClientOperationTimePerOutputChunk{}},
		{MetricTokenUsage, "{token}", genaiconv.ClientTokenUsage{}},
	} {
		t.Run(tc.ours, func(t *testing.T) {
			t.Parallel()
			if tc.conv.Name() != tc.ours || tc.conv.Unit() != tc.unit {
				t.Errorf("semconv %s says %s [%s], we export %s [%s]", SemconvVersion, tc.conv.Name(), tc.conv.Unit(), tc.ours, tc.unit)
			}
		})
	}
	if string(genaiconv.TokenTypeInput) != "input" || string(genaiconv.TokenTypeOutput) != "output" {
		t.Errorf("gen_ai.token.type values changed: %q %q", genaiconv.TokenTypeInput, genaiconv.TokenTypeOutput)
	}
}

// TestInstrumentsInMemory checks every instrument through an in-memory
// reader: names, and that recording is possible without any exporter.
func TestInstrumentsInMemory(t *testing.T) {
	t.Parallel()
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	in, err := newInstruments(mp.Meter(InstrumentationName))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in.ttft.Record(ctx, (25 * time.Millisecond).Seconds())
	in.requests.Add(ctx, 1)
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = true
		}
	}
	for _, name := range []string{MetricTTFT, MetricRequests} {
		if !got[name] {
			t.Errorf("%s not collected (got %v)", name, got)
		}
	}
	if err := mp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}
