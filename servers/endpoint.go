package servers

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/internal/secret"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// CheckURL accepts an http:// or https:// base URL with a host and
// no query or fragment. Errors show the URL with its userinfo redacted.
func CheckURL(raw string) error {
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

// Description is what a server says about itself, recorded in the
// results manifest (manifest.server.<arm>.description).
type Description struct {
	// Models are the ids GET /v1/models listed; ModelsBody is its body.
	Models     []string        `json:"models"`
	ModelsBody json.RawMessage `json:"v1_models,omitempty"`
	// Version is GET /version's body (JSON, or text) when it answered 200.
	Version any `json:"version,omitempty"`
	// ServerHeader is the HTTP Server header of the /v1/models answer.
	ServerHeader string `json:"server_header,omitempty"`
	// CompletionCheck is the one minimal completion sent before anything
	// was measured (Prober.Probe).
	CompletionCheck *CompletionCheck `json:"completion_check,omitempty"`
}

// CompletionCheck is the one minimal completion a run sends to a server
// before it measures anything (max_tokens 1, not streamed, in no cell,
// record or count): a server that lists its models to anyone but refuses
// completions without the right credentials is refused up front.
type CompletionCheck struct {
	// Path is the route the run's requests take (request.endpoint).
	Path      string `json:"path"`
	MaxTokens int    `json:"max_tokens"`
	// Status is the HTTP status answered (0: no answer; Error says why).
	Status int `json:"http_status"`
	// Error is the transport error, or the start of a non-2xx answer's body.
	Error string `json:"error,omitempty"`
	// PromptTokens and CompletionTokens are the answer's usage, when it
	// gave one: what the check added to the server's own token counters.
	PromptTokens     *int `json:"prompt_tokens,omitempty"`
	CompletionTokens *int `json:"completion_tokens,omitempty"`
	// Counted is always false: the check is not part of any measurement.
	Counted bool `json:"counted"`
}

// Problem is a sentence for a warning when the check got no 2xx answer for
// another reason than refused credentials (those are an error), else ""
// (also for a nil c: no check was made).
func (c *CompletionCheck) Problem() string {
	if c == nil || c.Status/100 == 2 {
		return ""
	}
	got := answered(c.Status, []byte(c.Error))
	if c.Status == 0 {
		got = "got no answer: " + report.OrText(c.Error, "no error recorded")
	}
	return fmt.Sprintf("the minimal completion sent before measuring (POST %s, max_tokens 1, not counted) %s; the run goes on, but its requests may fail the same way", c.Path, got)
}

// Prober asks a server about itself with the run's headers, TLS settings
// and request route.
type Prober struct {
	client   *http.Client
	headers  http.Header
	endpoint loadgen.Endpoint
}

// NewProber returns a Prober sending headers (the run's request headers,
// secrets expanded; nil for none) over TLS settings tc (nil: system roots),
// its completion check on route ep (request.endpoint), each request
// bounded to 10 s (the completion check to 60 s).
func NewProber(headers http.Header, tc *tls.Config, ep loadgen.Endpoint) *Prober {
	c := loadgen.NewHTTPClient()
	c.Transport.(*http.Transport).TLSClientConfig = tc
	c.Timeout = 10 * time.Second
	return &Prober{client: c, headers: headers, endpoint: ep}
}

// Close closes the Prober's idle connections.
func (p *Prober) Close() { p.client.CloseIdleConnections() }

// get returns the status, Server header and up to 1 MiB of body of GET base+path.
func (p *Prober) get(ctx context.Context, base, path string) (int, string, []byte, error) {
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

// Describe asks the server at base for /v1/models (required: unreachable,
// refused credentials or an answer that is not a model list is an error
// saying which) and /version (recorded when it answers 200).
func (p *Prober) Describe(ctx context.Context, base string) (Description, error) {
	var d Description
	where := secret.URL(base)
	st, srv, body, err := p.get(ctx, base, "/v1/models")
	switch {
	case err != nil:
		return d, fmt.Errorf("server %s is unreachable: %w", where, err)
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return d, fmt.Errorf("server %s refused the credentials: GET /v1/models answered %d %s; %s", where, st, http.StatusText(st), p.sentHeaders())
	case st != http.StatusOK:
		return d, fmt.Errorf("server %s: GET %s %s", where, urlPath(base, "/v1/models"), answered(st, body))
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

// sentHeaders names the headers the Prober sends, never their values.
func (p *Prober) sentHeaders() string {
	if len(p.headers) == 0 {
		return "request.headers sets none"
	}
	names := make([]string, 0, len(p.headers))
	for k := range p.headers {
		names = append(names, k)
	}
	sort.Strings(names)
	return "sent request.headers " + strings.Join(names, ", ") + " (values not shown)"
}

// CheckCompletion sends one minimal completion for model to the server at
// base on the run's route (max_tokens 1, not streamed, a one-word prompt),
// with the run's headers. Refused credentials (401 or 403) are an error
// naming the headers sent, never their values; any other outcome is
// returned for the manifest (CompletionCheck.Problem says when to warn).
func (p *Prober) CheckCompletion(ctx context.Context, base, model string) (CompletionCheck, error) {
	c := CompletionCheck{Path: p.endpoint.Path(), MaxTokens: 1}
	body := map[string]any{"model": model, "max_tokens": 1, "stream": false}
	if p.endpoint == loadgen.EndpointChat {
		body["messages"] = []map[string]string{{"role": "user", "content": "Hello"}}
	} else {
		body["prompt"] = "Hello"
	}
	b, err := json.Marshal(body)
	if err != nil {
		return c, err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+c.Path, bytes.NewReader(b))
	if err != nil {
		return c, err
	}
	for k, v := range p.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	client := *p.client
	client.Timeout = 0 // ctx bounds it: a first completion may be slow
	resp, err := client.Do(req)
	if err != nil {
		c.Error = err.Error()
		return c, nil
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	c.Status = resp.StatusCode
	switch {
	case c.Status == http.StatusUnauthorized || c.Status == http.StatusForbidden:
		return c, fmt.Errorf("server %s refused the credentials on a completion: POST %s (max_tokens 1, sent before anything is measured) answered %d %s, although GET /v1/models answered 200 OK; %s",
			secret.URL(base), c.Path, c.Status, http.StatusText(c.Status), p.sentHeaders())
	case c.Status/100 != 2:
		c.Error = clip(rb, 200)
	default:
		var doc struct {
			Usage *struct {
				PromptTokens     *int `json:"prompt_tokens"`
				CompletionTokens *int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(rb, &doc) == nil && doc.Usage != nil {
			c.PromptTokens, c.CompletionTokens = doc.Usage.PromptTokens, doc.Usage.CompletionTokens
		}
	}
	return c, nil
}

// answered is a non-2xx answer for an error message: "answered 404 Not
// Found with an empty body", or its body's first 200 bytes after a colon.
// A 404 adds what it usually means: the URL is not the server's root.
func answered(status int, body []byte) string {
	s := fmt.Sprintf("answered %d %s", status, http.StatusText(status))
	if b := clip(body, 200); b != "" {
		s += ": " + b
	} else {
		s += " with an empty body"
	}
	if status == http.StatusNotFound {
		s += " (no such route here: is the URL the server's root, where it serves /v1/…?)"
	}
	return s
}

// urlPath is the path of the URL asked, base's own path included
// ("/api/v1/models" for base "https://h/api"), without scheme, host,
// credentials or query: safe to print.
func urlPath(base, path string) string {
	u, err := url.Parse(base)
	if err != nil {
		return path
	}
	return strings.TrimRight(u.Path, "/") + path
}

// JSONText is v's JSON for a person to read: no HTML escaping (">" stays
// ">", not "\u003e"), no trailing newline; fmt's %v when v has none.
func JSONText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func clip(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// PickModel is the model requests name: request.model when set, else the
// one model the server lists; no model or several is an error listing them.
func PickModel(requested string, d Description, where string) (string, error) {
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

// Target is one endpoint as probed before the run.
type Target struct {
	// URL is the base URL (no trailing slash); Model the model id requests
	// name; Desc what the server said about itself.
	URL   string
	Model string
	Desc  Description
}

// Probe asks the server at base about itself (Describe), picks its model
// (PickModel with requested) and sends it one minimal completion
// (CheckCompletion): an unreachable server, refused credentials (on the
// model list or on the completion) or an unclear model is an error saying
// which.
func (p *Prober) Probe(ctx context.Context, base, requested string) (Target, error) {
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	d, err := p.Describe(pctx, base)
	cancel()
	if err != nil {
		return Target{}, err
	}
	m, err := PickModel(requested, d, secret.URL(base))
	if err != nil {
		return Target{}, err
	}
	chk, err := p.CheckCompletion(ctx, base, m)
	if err != nil {
		return Target{}, err
	}
	d.CompletionCheck = &chk
	return Target{URL: strings.TrimRight(base, "/"), Model: m, Desc: d}, nil
}

// About is t in one line for the report: URL (credentials redacted),
// model, and the Server header and /version answer when the server gave them.
func (t Target) About() string {
	s := fmt.Sprintf("%s, model %s", secret.URL(t.URL), t.Model)
	if t.Desc.ServerHeader != "" {
		s += ", Server: " + t.Desc.ServerHeader
	}
	if t.Desc.Version != nil {
		s += ", /version: " + clip([]byte(JSONText(t.Desc.Version)), 200)
	}
	return s
}

// EndpointServer is one arm measured on a running server.
type EndpointServer struct {
	target Target
	pins   map[string]any
	probe  *Prober
	device int
	never  chan struct{}
}

var _ Server = (*EndpointServer)(nil)

// StartEndpoint checks that the server t (probed before the run) is still
// ready and returns it for one arm; pins are what the user declares about
// it (server.endpoint.pins, echoed verbatim in Info), device the GPU read
// for energy when the server is on this machine. The server keeps p.
func StartEndpoint(ctx context.Context, t Target, pins map[string]any, p *Prober, device int) (*EndpointServer, error) {
	a := &EndpointServer{target: t, pins: pins, probe: p, device: device, never: make(chan struct{})}
	if err := a.Ready(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// BaseURL is the server's base URL.
func (a *EndpointServer) BaseURL() string { return a.target.URL }

// Model is the model id requests name on this server.
func (a *EndpointServer) Model() string { return a.target.Model }

// Ready returns nil when GET /v1/models answers 200 (with the run's headers).
func (a *EndpointServer) Ready(ctx context.Context) error {
	st, _, _, err := a.probe.get(ctx, a.target.URL, "/v1/models")
	if err == nil && st != http.StatusOK {
		err = fmt.Errorf("GET /v1/models answered %d %s", st, http.StatusText(st))
	}
	if err != nil {
		return fmt.Errorf("server %s: %w", secret.URL(a.target.URL), err)
	}
	return nil
}

// ResetProfile does nothing: Profile gives no fraction.
func (a *EndpointServer) ResetProfile(context.Context) error { return nil }

// Profile is nil: the inside of a server transferlab did not launch is not
// visible (no f, no hook).
func (a *EndpointServer) Profile(context.Context, report.CellKey, []amdahl.Interval) (*amdahl.Fractions, error) {
	return nil, nil
}

// Sampler reads this machine's GPU (whole device, no process attribution)
// when the endpoint is on this machine (loopback host); a remote server's
// energy cannot be measured from here.
func (a *EndpointServer) Sampler() energy.Sampler {
	if u, err := url.Parse(a.target.URL); err == nil {
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return energy.NewNVML(a.device)
		}
	}
	return remoteSampler{}
}

// Died never closes: transferlab does not watch a server it did not launch
// (a dead one fails the cell's requests).
func (a *EndpointServer) Died() <-chan struct{} { return a.never }

// Err is nil (Died never closes).
func (a *EndpointServer) Err() error { return nil }

// Info is the URL (credentials redacted), the model, what the server said
// about itself and the user's pins.
func (a *EndpointServer) Info(context.Context) map[string]any {
	info := map[string]any{"kind": Endpoint, "launched_by_transferlab": false,
		"url": secret.URL(a.target.URL), "model": a.target.Model, "description": a.target.Desc}
	if len(a.pins) > 0 {
		info["pins"] = a.pins
	}
	return info
}

// Hook is nil: no hook can be put into a server transferlab did not launch.
func (a *EndpointServer) Hook(context.Context) *report.HookArm { return nil }

// Close lets go of the server (its idle connections); the server keeps running.
func (a *EndpointServer) Close(context.Context) error {
	a.probe.Close()
	return nil
}

// remoteSampler measures nothing: the server's GPU is on another machine.
type remoteSampler struct{}

var errRemote = fmt.Errorf("%w: the endpoint is on another machine; its GPU is not visible from here", energy.ErrUnavailable)

func (remoteSampler) Start(context.Context, time.Duration) error { return errRemote }
func (remoteSampler) Stop() (energy.Window, error)               { return energy.Window{}, errRemote }
