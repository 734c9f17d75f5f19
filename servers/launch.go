package servers

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/internal/secret"
)

// Launcher is the one launch path of server.kind reference and command for
// one run: it starts a spec (integrate.Launch) with the run's request
// headers on its readiness probes and the run's scrubber on its log, once
// the GPU's memory is back to what it was before the first launched server
// (between arms). It keeps that first reading, so one Launcher serves one
// run; it is not safe for concurrent use.
type Launcher struct {
	// Device is the GPU index whose memory is checked (energy.device).
	Device int
	// Log receives where each server's log goes and the GPU memory checks;
	// Warn the line saying the check is off. Both must be non-nil.
	Log, Warn io.Writer
	// Headers are the run's request headers (secrets expanded), sent on
	// readiness probes; Scrub removes every secret from the server's log.
	Headers http.Header
	Scrub   *secret.Scrubber
	// idle is the GPU memory in use before the first launched server
	// (bytes); unknown is set once reading it failed (warned once).
	idle    *uint64
	unknown bool
}

// launch starts spec for the arm named arm of a kind-server.
func (l *Launcher) launch(ctx context.Context, kind, arm string, spec integrate.Spec) (*integrate.Process, error) {
	used := integrate.UsedMemoryFunc(energy.UsedMemory(l.Device))
	switch {
	case l.idle == nil && !l.unknown:
		if b, err := used(ctx); err == nil {
			l.idle = &b
		} else {
			l.unknown = true
			fmt.Fprintf(l.Warn, "warning: GPU memory before the run unknown (%v): the between-arms idle check is off\n", err)
		}
	case l.idle != nil:
		got, err := integrate.WaitGPUIdle(ctx, used, *l.idle)
		if err != nil {
			return nil, fmt.Errorf("GPU memory did not return to idle (%d bytes before the run) after the previous arm: %w", *l.idle, err)
		}
		fmt.Fprintf(l.Log, "GPU memory back to idle before arm %s: %d bytes in use (%d before the run)\n", arm, got, *l.idle)
	}
	spec.Headers = l.Headers
	spec.LogScrub = l.Scrub
	fmt.Fprintf(l.Log, "launching the %s server for arm %s (log: %s)\n", kind, arm, spec.LogPath)
	return integrate.Launch(ctx, spec)
}
