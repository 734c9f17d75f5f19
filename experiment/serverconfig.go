package experiment

import (
	"errors"
	"fmt"

	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/sim"
)

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

// defaultModel is the model name the server serves, sent when request.model is empty.
func (s ServerConfig) defaultModel() string {
	switch s.Kind {
	case servers.Sim:
		if s.Sim != nil {
			return s.Sim.Model.Name
		}
		return sim.DefaultConfig().Model.Name
	case servers.Reference:
		if s.Reference != nil {
			return s.Reference.Effective().ServedModelName
		}
	}
	return ""
}

func (s ServerConfig) validate() error {
	switch s.Kind {
	case servers.Sim:
		if s.Sim == nil {
			return nil
		}
		return s.Sim.Validate()
	case servers.Reference:
		if s.Reference == nil {
			return errors.New("reference: required when kind is reference")
		}
		if err := s.Reference.Validate(); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
		return nil
	case servers.Command:
		if s.Command == nil {
			return errors.New("command: required when kind is command (command.argv at least)")
		}
		return s.Command.Validate()
	case servers.Endpoint:
		if s.Endpoint != nil && s.Endpoint.URL != "" {
			if err := servers.CheckURL(s.Endpoint.URL); err != nil {
				return fmt.Errorf("endpoint.url: %w", err)
			}
		}
		return nil
	case "":
		return errors.New("kind: required (" + servers.Kinds + ")")
	default:
		return fmt.Errorf("kind %q: %w (want %s)", s.Kind, servers.ErrNoKind, servers.Kinds)
	}
}

// extraBlocks names the server blocks set for another kind than s.Kind.
func (s ServerConfig) extraBlocks() []string {
	var out []string
	for _, b := range []struct {
		kind string
		set  bool
	}{{servers.Sim, s.Sim != nil}, {servers.Reference, s.Reference != nil}, {servers.Command, s.Command != nil}, {servers.Endpoint, s.Endpoint != nil}} {
		if b.set && b.kind != s.Kind {
			out = append(out, b.kind)
		}
	}
	return out
}
