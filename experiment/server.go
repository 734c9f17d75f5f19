package experiment

import (
	"context"
	"errors"
	"fmt"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/sim"
)

// Server kinds.
const (
	// ServerSim is the embedded simulated server (default; no GPU).
	ServerSim = "sim"
	// ServerReference is the pinned PyTorch/transformers reference server,
	// launched by integrate: a preset of ServerCommand.
	ServerReference = "reference"
	// ServerCommand is any server launched by argv (server.command).
	ServerCommand = "command"
	// ServerEndpoint is an already-running OpenAI-compatible server
	// (server.endpoint.url or arms[].endpoint.url), neither launched nor
	// pinned by transferlab.
	ServerEndpoint = "endpoint"
)

// serverKinds lists the kinds for error messages.
const serverKinds = "sim, reference, command or endpoint"

// armServer is one started server for one arm: the system under test plus
// what the experiment reads from it.
type armServer interface {
	loadgen.Server
	// ResetProfile starts a new profiling window.
	ResetProfile(ctx context.Context) error
	// Profile returns the target op's addressable fraction over the window
	// since the last reset. active holds the cell's requests' [sent, end]
	// intervals on the Unix clock (ns since the epoch), for servers that do not
	// track their own active time.
	Profile(ctx context.Context, key cellKey, active []amdahl.Interval) (*amdahl.Fractions, error)
	// Sampler returns a fresh energy sampler for one measured window.
	Sampler() energy.Sampler
	// Died is closed if the server exits on its own; Err then says why.
	Died() <-chan struct{}
	Err() error
	// Info returns the server's manifest for the report.
	Info(ctx context.Context) map[string]any
	// Hook returns the override hook's counters (nil when the server has no hook).
	Hook(ctx context.Context) *report.HookArm
	Close(ctx context.Context) error
}

var errNoServerKind = errors.New("unknown server kind")

// defaultModel is the model name the server serves, sent when request.model is empty.
func (s ServerConfig) defaultModel() string {
	switch s.Kind {
	case ServerSim:
		if s.Sim != nil {
			return s.Sim.Model.Name
		}
		return sim.DefaultConfig().Model.Name
	case ServerReference:
		if s.Reference != nil {
			return s.Reference.Effective().ServedModelName
		}
	}
	return ""
}

func (s ServerConfig) validate() error {
	switch s.Kind {
	case ServerSim:
		if s.Sim == nil {
			return nil
		}
		return s.Sim.Validate()
	case ServerReference:
		if s.Reference == nil {
			return errors.New("reference: required when kind is reference")
		}
		if err := s.Reference.Validate(); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
		return nil
	case ServerCommand:
		if s.Command == nil {
			return errors.New("command: required when kind is command (command.argv at least)")
		}
		return s.Command.Validate()
	case ServerEndpoint:
		if s.Endpoint != nil && s.Endpoint.URL != "" {
			if err := checkEndpointURL(s.Endpoint.URL); err != nil {
				return fmt.Errorf("endpoint.url: %w", err)
			}
		}
		return nil
	case "":
		return errors.New("kind: required (" + serverKinds + ")")
	default:
		return fmt.Errorf("kind %q: %w (want %s)", s.Kind, errNoServerKind, serverKinds)
	}
}

// extraBlocks names the server blocks set for another kind than s.Kind.
func (s ServerConfig) extraBlocks() []string {
	var out []string
	for _, b := range []struct {
		kind string
		set  bool
	}{{ServerSim, s.Sim != nil}, {ServerReference, s.Reference != nil}, {ServerCommand, s.Command != nil}, {ServerEndpoint, s.Endpoint != nil}} {
		if b.set && b.kind != s.Kind {
			out = append(out, b.kind)
		}
	}
	return out
}

// startArm starts the server of one arm.
func (r *runner) startArm(ctx context.Context, arm ArmConfig) (armServer, error) {
	switch r.cfg.Server.Kind {
	case ServerSim:
		return r.startSim(ctx, arm)
	case ServerReference:
		return r.startReference(ctx, arm)
	case ServerCommand:
		return r.startCommand(ctx, arm)
	case ServerEndpoint:
		return r.startEndpoint(ctx, arm)
	default:
		return nil, fmt.Errorf("server kind %q: %w", r.cfg.Server.Kind, errNoServerKind)
	}
}

// addServerInfo keeps each arm's server manifest (versions, config, hook
// receipts) in the results manifest.
func (r *runner) addServerInfo(ctx context.Context, arm string, srv armServer) {
	if r.res.Manifest.Server == nil {
		r.res.Manifest.Server = map[string]any{}
	}
	if _, ok := r.res.Manifest.Server[arm]; !ok {
		r.res.Manifest.Server[arm] = srv.Info(ctx)
	}
}

// untilDied returns a context that ends with ctx or when died closes (the
// server under a replay exited), whichever comes first; the replay then
// stops and the caller reports the death.
func untilDied(ctx context.Context, died <-chan struct{}) (context.Context, context.CancelFunc) {
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

// ServerConfig is the `server` block: which server is under test.
type ServerConfig struct {
	// Kind is sim (the embedded simulated server), reference (the pinned
	// PyTorch/transformers server launched on a GPU machine), command (any
	// server launched by argv) or endpoint (an already-running server).
	Kind string `yaml:"kind"`
	// Sim configures the simulated server (defaults: Llama-3-8B on an H200-like GPU).
	Sim *SimSection `yaml:"sim,omitempty"`
	// Reference configures the launched reference server.
	Reference *integrate.ReferenceConfig `yaml:"reference,omitempty"`
	// Command launches any server by argv; the config is then trusted
	// input (it runs that program).
	Command *integrate.CommandConfig `yaml:"command,omitempty"`
	// Endpoint names a running server shared by all arms (arms[].endpoint
	// overrides it per arm) and what the user declares about it.
	Endpoint *EndpointConfig `yaml:"endpoint,omitempty"`
}

// EndpointConfig is the `server.endpoint` block.
type EndpointConfig struct {
	// URL is the OpenAI-compatible base URL (http:// or https://, without
	// /v1) of a server every arm without its own endpoint is measured on.
	URL string `yaml:"url,omitempty"`
	// Pins are what the user declares about the deployment (image digest,
	// engine version, GPU, flags), echoed verbatim into results.json and
	// the report: transferlab cannot check them.
	Pins map[string]any `yaml:"pins,omitempty"`
}

// appendServerRecord appends rec to the list under
// manifest.server.<arm>.<key> in the results.
func appendServerRecord[T any](r *runner, arm, key string, rec T) {
	m := r.res.Manifest.Server
	if m == nil {
		m = map[string]any{}
		r.res.Manifest.Server = m
	}
	info, _ := m[arm].(map[string]any)
	if info == nil {
		info = map[string]any{}
		m[arm] = info
	}
	recs, _ := info[key].([]T)
	info[key] = append(recs, rec)
}
