package servers

import (
	"context"
	"errors"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// Server kinds (server.kind).
const (
	// Sim is the embedded simulated server (default; no GPU).
	Sim = "sim"
	// Reference is the pinned PyTorch/transformers reference server,
	// launched by integrate: a preset of Command.
	Reference = "reference"
	// Command is any server launched by argv (server.command).
	Command = "command"
	// Endpoint is an already-running OpenAI-compatible server
	// (server.endpoint.url or arms[].endpoint.url), neither launched nor
	// pinned by transferlab.
	Endpoint = "endpoint"
)

// Kinds lists the kinds for error messages.
const Kinds = "sim, reference, command or endpoint"

// ErrNoKind is returned for a server kind that is none of Kinds.
var ErrNoKind = errors.New("unknown server kind")

// Server is one started server for one arm: the system under test (its
// base URL and readiness, loadgen.Server) plus what an experiment reads
// from it.
type Server interface {
	loadgen.Server
	// ResetProfile starts a new profiling window.
	ResetProfile(ctx context.Context) error
	// Profile returns the target op's addressable fraction over the window
	// since the last reset for cell; nil, nil when the server gives none.
	// active holds the cell's requests' [sent, end] intervals on the Unix
	// clock (ns since the epoch), for servers that do not track their own
	// active time.
	Profile(ctx context.Context, cell report.CellKey, active []amdahl.Interval) (*amdahl.Fractions, error)
	// Sampler returns a fresh energy sampler for one measured window.
	Sampler() energy.Sampler
	// Died is closed if the server exits on its own; Err then says why.
	Died() <-chan struct{}
	Err() error
	// Info returns the server's manifest for the report: what it is, how it
	// was started and what it says about itself.
	Info(ctx context.Context) map[string]any
	// Hook returns the override hook's counters (nil when the server has no hook).
	Hook(ctx context.Context) *report.HookArm
	// Close stops the server (a launched one) or lets go of it (an endpoint).
	Close(ctx context.Context) error
}

// UntilDied returns a context that ends with ctx or when died closes (the
// server under a replay exited), whichever comes first; the replay then
// stops and the caller reports the death.
func UntilDied(ctx context.Context, died <-chan struct{}) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-died:
			cancel()
		case <-c.Done():
		}
	}()
	return c, cancel
}
