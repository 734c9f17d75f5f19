package experiment

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/transferlab/transferlab/internal/secret"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/servers"
)

// armURL is the endpoint URL of arm: its own, else server.endpoint.url.
func (c *Config) armURL(a ArmConfig) string {
	if a.Endpoint != nil && a.Endpoint.URL != "" {
		return a.Endpoint.URL
	}
	if c.Server.Endpoint != nil {
		return c.Server.Endpoint.URL
	}
	return ""
}

// newProber is a servers.Prober with l's headers and TLS settings and c's
// request route.
func newProber(c *Config, l *live) *servers.Prober {
	return servers.NewProber(l.headers, l.tls, loadgen.Endpoint(c.Request.Endpoint))
}

// probeEndpoints asks every endpoint arm's server about itself and picks
// its model, before anything is measured or written: an unreachable
// server, refused credentials or an unclear model ends the run here. The
// targets are keyed by URL (Config.armURL), so an arm added at run time
// (the baseline's A/A replicate) finds its server.
func probeEndpoints(ctx context.Context, c *Config, l *live) (map[string]servers.Target, error) {
	p := newProber(c, l)
	defer p.Close()
	out := map[string]servers.Target{}
	var errs []error
	for _, a := range c.Arms {
		u := c.armURL(a)
		if _, done := out[u]; done {
			continue
		}
		t, err := p.Probe(ctx, u, c.Request.Model)
		if err != nil {
			errs = append(errs, fmt.Errorf("arm %s: %w", a.Name, err))
			continue
		}
		out[u] = t
	}
	return out, errors.Join(errs...)
}

// endpointNotice is the report's first line for an endpoint run.
func endpointNotice(c *Config, targets map[string]servers.Target) string {
	var parts []string
	for _, a := range c.Arms {
		parts = append(parts, fmt.Sprintf("arm %s: %s", a.Name, targets[c.armURL(a)].About()))
	}
	msg := "server.kind endpoint: the servers were NOT launched or pinned by transferlab; what they said about themselves is recorded, nothing more (" +
		strings.Join(parts, "; ") + ")"
	if e := c.Server.Endpoint; e != nil && len(e.Pins) > 0 {
		msg += "; declared by the user, unchecked: server.endpoint.pins " + pinsText(e.Pins)
	}
	return msg
}

// pinsText prints server.endpoint.pins as written in a config's flow style,
// keys sorted: "{engine: vllm, version: >=0.6.3}". A value that is not a
// string is its JSON, with no HTML escaping (">" stays ">", not "\u003e");
// any URL's userinfo is redacted.
func pinsText(pins map[string]any) string {
	parts := make([]string, 0, len(pins))
	for _, k := range slices.Sorted(maps.Keys(pins)) {
		v, ok := pins[k].(string)
		if !ok {
			v = servers.JSONText(pins[k])
		}
		parts = append(parts, k+": "+v)
	}
	return secret.URL("{" + strings.Join(parts, ", ") + "}")
}

// completionWarnings are the warnings of the endpoints' completion checks
// (servers.CompletionCheck.Problem), one per server that needs one.
func completionWarnings(c *Config, targets map[string]servers.Target) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range c.Arms {
		u := c.armURL(a)
		t, ok := targets[u]
		if !ok || seen[u] {
			continue
		}
		seen[u] = true
		if w := t.Desc.CompletionCheck.Problem(); w != "" {
			out = append(out, fmt.Sprintf("arm %s: server %s: %s", a.Name, secret.URL(t.URL), w))
		}
	}
	return out
}

// serverNotice is the report's first line about who launched the servers
// ("" for the simulator, the reference server and command servers, which
// transferlab launched and pins), and the loud line of a run with TLS
// verification off.
func serverNotice(c *Config, targets map[string]servers.Target) string {
	var parts []string
	if c.Server.Kind == servers.Endpoint {
		parts = append(parts, endpointNotice(c, targets))
	}
	if t := c.Request.TLS; t != nil && t.InsecureSkipVerify {
		parts = append(parts, "request.tls.insecure_skip_verify is ON: the servers' TLS certificates were NOT verified; anyone on the network path could have read or changed this run's traffic, credentials included")
	}
	return strings.Join(parts, ". ")
}
