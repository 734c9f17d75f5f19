package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/internal/secret"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// checkEndpointURL accepts an http:// or https:// base URL with a host and
// no query or fragment. Errors show the URL with its userinfo redacted.
func checkEndpointURL(raw string) error {
	if raw == "" {
		return errors.New("required")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL", secret.URL(raw))
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q needs an http:// or https:// scheme", secret.URL(raw))
	case u.Host == "":
		return fmt.Errorf("%q has no host", secret.URL(raw))
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q: a base URL takes no query or fragment", secret.URL(raw))
	case strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1"):
		return fmt.Errorf("%q: give the base URL without /v1 (transferlab appends /v1/completions)", secret.URL(raw))
	}
	return nil
}

// serverDescription is what a server says about itself, recorded in the
// results manifest (manifest.server.<arm>.description).
type serverDescription struct {
	// Models are the ids GET /v1/models listed; ModelsBody is its body.
	Models     []string        `json:"models"`
	ModelsBody json.RawMessage `json:"v1_models,omitempty"`
	// Version is GET /version's body (JSON, or text) when it answered 200.
	Version any `json:"version,omitempty"`
	// ServerHeader is the HTTP Server header of the /v1/models answer.
	ServerHeader string `json:"server_header,omitempty"`
}

// prober asks a server about itself with the run's headers and TLS.
type prober struct {
	client  *http.Client
	headers http.Header
}

func newProber(l *live) *prober {
	c := loadgen.NewHTTPClient()
	c.Transport.(*http.Transport).TLSClientConfig = l.tls
	c.Timeout = 10 * time.Second
	return &prober{client: c, headers: l.headers}
}

// get returns the status, Server header and up to 1 MiB of body of GET base+path.
func (p *prober) get(ctx context.Context, base, path string) (int, string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	for k, v := range p.headers {
		req.Header[k] = v
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header.Get("Server"), b, err
}

// describe asks the server at base for /v1/models (required: unreachable,
// refused credentials or an answer that is not a model list is an error
// saying which) and /version (recorded when it answers 200).
func (p *prober) describe(ctx context.Context, base string) (serverDescription, error) {
	var d serverDescription
	where := secret.URL(base)
	st, srv, body, err := p.get(ctx, base, "/v1/models")
	switch {
	case err != nil:
		return d, fmt.Errorf("server %s is unreachable: %w", where, err)
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		hint := "request.headers sets none"
		if len(p.headers) > 0 {
			names := make([]string, 0, len(p.headers))
			for k := range p.headers {
				names = append(names, k)
			}
			hint = "sent request.headers " + strings.Join(names, ", ") + " (values not shown)"
		}
		return d, fmt.Errorf("server %s refused the credentials: GET /v1/models answered %d %s; %s", where, st, http.StatusText(st), hint)
	case st != http.StatusOK:
		return d, fmt.Errorf("server %s: GET /v1/models answered %d %s: %s", where, st, http.StatusText(st), clip(body, 200))
	}
	var doc struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return d, fmt.Errorf("server %s: GET /v1/models is not an OpenAI model list: %w", where, err)
	}
	for _, m := range doc.Data {
		d.Models = append(d.Models, m.ID)
	}
	d.ModelsBody = json.RawMessage(bytes.TrimSpace(body))
	d.ServerHeader = srv
	if st, _, vb, err := p.get(ctx, base, "/version"); err == nil && st == http.StatusOK {
		var v any
		if json.Unmarshal(vb, &v) == nil {
			d.Version = v
		} else {
			d.Version = clip(vb, 4096)
		}
	}
	return d, nil
}

func clip(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// pickModel is the model requests name: request.model when set, else the
// one model the server lists; no model or several is an error listing them.
func pickModel(requested string, d serverDescription, where string) (string, error) {
	if requested != "" {
		return requested, nil
	}
	switch len(d.Models) {
	case 1:
		return d.Models[0], nil
	case 0:
		return "", fmt.Errorf("server %s lists no model on GET /v1/models; set request.model", where)
	}
	return "", fmt.Errorf("server %s serves %d models (%s); set request.model to one of them", where, len(d.Models), strings.Join(d.Models, ", "))
}

// endpointTarget is one endpoint arm as probed before the run.
type endpointTarget struct {
	url   string
	model string
	desc  serverDescription
}

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

// probeEndpoints asks every endpoint arm's server about itself and picks
// its model, before anything is measured or written: an unreachable
// server, refused credentials or an unclear model ends the run here. The
// targets are keyed by URL (Config.armURL), so an arm added at run time
// (the baseline's A/A replicate) finds its server.
func probeEndpoints(ctx context.Context, c *Config, l *live) (map[string]endpointTarget, error) {
	p := newProber(l)
	defer p.client.CloseIdleConnections()
	out := map[string]endpointTarget{}
	var errs []error
	for _, a := range c.Arms {
		u := c.armURL(a)
		if _, done := out[u]; done {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		d, err := p.describe(pctx, u)
		cancel()
		if err == nil {
			var m string
			if m, err = pickModel(c.Request.Model, d, secret.URL(u)); err == nil {
				out[u] = endpointTarget{url: strings.TrimRight(u, "/"), model: m, desc: d}
				continue
			}
		}
		errs = append(errs, fmt.Errorf("arm %s: %w", a.Name, err))
	}
	return out, errors.Join(errs...)
}

// endpointNotice is the report's first line for an endpoint run.
func endpointNotice(c *Config, targets map[string]endpointTarget) string {
	var parts []string
	for _, a := range c.Arms {
		t := targets[c.armURL(a)]
		s := fmt.Sprintf("arm %s: %s, model %s", a.Name, secret.URL(t.url), t.model)
		if t.desc.ServerHeader != "" {
			s += ", Server: " + t.desc.ServerHeader
		}
		if t.desc.Version != nil {
			if b, err := json.Marshal(t.desc.Version); err == nil {
				s += ", /version: " + clip(b, 200)
			}
		}
		parts = append(parts, s)
	}
	msg := "server.kind endpoint: the servers were NOT launched or pinned by transferlab; what they said about themselves is recorded, nothing more (" +
		strings.Join(parts, "; ") + ")"
	if e := c.Server.Endpoint; e != nil && len(e.Pins) > 0 {
		if b, err := json.Marshal(e.Pins); err == nil {
			msg += "; declared by the user, unchecked: server.endpoint.pins " + string(b)
		}
	}
	return msg
}

// endpointArm is one arm measured on a running server.
type endpointArm struct {
	target endpointTarget
	pins   map[string]any
	probe  *prober
	device int
	never  chan struct{}
}

var _ armServer = (*endpointArm)(nil)

func (r *runner) startEndpoint(ctx context.Context, arm ArmConfig) (armServer, error) {
	t, ok := r.endpoints[r.cfg.armURL(arm)]
	if !ok {
		return nil, fmt.Errorf("arm %s: no endpoint probed", arm.Name)
	}
	a := &endpointArm{target: t, probe: newProber(r.live), device: r.cfg.Energy.Device, never: make(chan struct{})}
	if e := r.cfg.Server.Endpoint; e != nil {
		a.pins = e.Pins
	}
	if err := a.Ready(ctx); err != nil {
		return nil, err
	}
	r.model = t.model
	return a, nil
}

func (a *endpointArm) BaseURL() string { return a.target.url }

// Ready returns nil when GET /v1/models answers 200 (with the run's headers).
func (a *endpointArm) Ready(ctx context.Context) error {
	st, _, _, err := a.probe.get(ctx, a.target.url, "/v1/models")
	if err == nil && st != http.StatusOK {
		err = fmt.Errorf("GET /v1/models answered %d %s", st, http.StatusText(st))
	}
	if err != nil {
		return fmt.Errorf("server %s: %w", secret.URL(a.target.url), err)
	}
	return nil
}

func (a *endpointArm) ResetProfile(context.Context) error { return nil }

// Profile is nil: the inside of a server transferlab did not launch is not
// visible (no f, no hook).
func (a *endpointArm) Profile(context.Context, cellKey, []amdahl.Interval) (*amdahl.Fractions, error) {
	return nil, nil
}

// Sampler reads this machine's GPU (whole device, no process attribution)
// when the endpoint is on this machine (loopback host); a remote server's
// energy cannot be measured from here.
func (a *endpointArm) Sampler() energy.Sampler {
	if u, err := url.Parse(a.target.url); err == nil {
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return energy.NewNVML(a.device)
		}
	}
	return remoteSampler{}
}

func (a *endpointArm) Died() <-chan struct{} { return a.never }
func (a *endpointArm) Err() error            { return nil }

func (a *endpointArm) Info(context.Context) map[string]any {
	info := map[string]any{"kind": ServerEndpoint, "launched_by_transferlab": false,
		"url": secret.URL(a.target.url), "model": a.target.model, "description": a.target.desc}
	if len(a.pins) > 0 {
		info["pins"] = a.pins
	}
	return info
}

// Hook is nil: no hook can be put into a server transferlab did not launch.
func (a *endpointArm) Hook(context.Context) *report.HookArm { return nil }

func (a *endpointArm) Close(context.Context) error {
	a.probe.client.CloseIdleConnections()
	return nil
}

// remoteSampler measures nothing: the server's GPU is on another machine.
type remoteSampler struct{}

var errRemote = fmt.Errorf("%w: the endpoint is on another machine; its GPU is not visible from here", energy.ErrUnavailable)

func (remoteSampler) Start(context.Context, time.Duration) error { return errRemote }
func (remoteSampler) Stop() (energy.Window, error)               { return energy.Window{}, errRemote }

// serverNotice is the report's first line about who launched the servers
// ("" for the simulator, the reference server and command servers, which
// transferlab launched and pins), and the loud line of a run with TLS
// verification off.
func serverNotice(c *Config, targets map[string]endpointTarget) string {
	var parts []string
	if c.Server.Kind == ServerEndpoint {
		parts = append(parts, endpointNotice(c, targets))
	}
	if t := c.Request.TLS; t != nil && t.InsecureSkipVerify {
		parts = append(parts, "request.tls.insecure_skip_verify is ON: the servers' TLS certificates were NOT verified; anyone on the network path could have read or changed this run's traffic, credentials included")
	}
	return strings.Join(parts, ". ")
}
