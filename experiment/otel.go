package experiment

import (
	"context"
	"fmt"
	"time"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/telemetry"
)

// startExport starts OpenTelemetry export when the config enables it. Export
// failures only warn: nothing measured depends on them.
func (r *runner) startExport(ctx context.Context) {
	if !r.cfg.Extra.OTel.Enabled {
		return
	}
	exp, err := telemetry.Start(ctx, r.cfg.Extra.OTel, telemetry.RunInfo{
		Name:         r.cfg.Name,
		ConfigSHA256: r.res.Manifest.ConfigSHA256,
		Model:        r.cfg.Request.Model,
		Simulated:    r.res.Simulated,
	}, telemetry.WithWarnings(r.warn))
	if err != nil {
		fmt.Fprintf(r.warn, "warning: OpenTelemetry export off: %v\n", err)
		return
	}
	r.otel = exp
}

// exportCell sends one cell's records (after the cell, off the measuring path).
func (r *runner) exportCell(ctx context.Context, key cellKey, rate float64, start time.Time, recs []loadgen.Record) {
	if r.otel == nil {
		return
	}
	c := r.otel.StartCell(ctx, key.arm, rate, key.rep, telemetry.CellStartedAt(start))
	if err := c.AddRecords(ctx, start, recs); err != nil {
		fmt.Fprintf(r.warn, "warning: OpenTelemetry: %v\n", err)
	}
	c.End()
	// Export now, so it does not take CPU while the next cell is measured.
	if err := r.otel.Flush(ctx); err != nil {
		fmt.Fprintf(r.warn, "warning: OpenTelemetry flush: %v\n", err)
	}
}

// stopExport flushes and shuts export down within the configured bound.
func (r *runner) stopExport(ctx context.Context) {
	if r.otel == nil {
		return
	}
	if err := r.otel.Shutdown(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintf(r.warn, "warning: OpenTelemetry shutdown: %v\n", err)
	}
}
