package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Endpoint selects the OpenAI-compatible route requests are sent to.
type Endpoint string

// The supported endpoints.
const (
	// EndpointCompletions is POST /v1/completions with prompt as token ids (default).
	EndpointCompletions Endpoint = "completions"
	// EndpointChat is POST /v1/chat/completions with one user message of synthesised text.
	EndpointChat Endpoint = "chat"
)

// Path is the request path of e on a server's base URL:
// /v1/chat/completions for EndpointChat, else /v1/completions.
func (e Endpoint) Path() string {
	if e == EndpointChat {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// Defaults of the options (vegeta style: each option states what it changes).
const (
	DefaultArm       = "baseline"
	DefaultModel     = ""
	DefaultEndpoint  = EndpointCompletions
	DefaultTimeout   = 5 * time.Minute
	DefaultLagBudget = time.Millisecond
)

// Option configures Replay.
type Option func(*config)

type config struct {
	arm         string
	offeredLoad float64
	repetition  int
	model       string
	endpoint    Endpoint
	stream      bool
	timeout     time.Duration
	warmup      time.Duration
	maxInFlight int
	closedLoop  int
	ignoreEOS   bool
	promptText  bool
	client      *http.Client
	headers     http.Header // sent with every request (WithHeaders)
	tls         *tls.Config // net/http's TLS settings for https:// (WithTLSConfig)
	transport   Transport   // client for plain http:// targets when client is nil
	lagBudget   time.Duration
	spin        time.Duration
	// sleep replaces the dispatcher's wait until a send time (tests hold
	// the dispatcher with it); nil: replay.sleepUntil.
	sleep func(ctx context.Context, due time.Duration) bool
	// blockTokens is the schedule's tokens per prefix block
	// (traces.Schedule.PrefixBlockTokens; 0: none), set by Replay.
	blockTokens int
	// observer is told of heads and first tokens as they arrive (WithObserver).
	observer Observer
}

func defaultConfig() config {
	return config{
		arm:       DefaultArm,
		model:     DefaultModel,
		endpoint:  DefaultEndpoint,
		stream:    true,
		timeout:   DefaultTimeout,
		ignoreEOS: true,
		lagBudget: DefaultLagBudget,
		spin:      defaultSpin,
		transport: defaultTransport,
	}
}

func (c *config) validate() error {
	switch {
	case c.endpoint != EndpointCompletions && c.endpoint != EndpointChat:
		return fmt.Errorf("loadgen: option endpoint: %q is neither %q nor %q", c.endpoint, EndpointCompletions, EndpointChat)
	case c.timeout <= 0:
		return fmt.Errorf("loadgen: option timeout: %v must be > 0", c.timeout)
	case c.warmup < 0:
		return fmt.Errorf("loadgen: option warmup: %v must be ≥ 0", c.warmup)
	case c.maxInFlight < 0:
		return fmt.Errorf("loadgen: option max_in_flight: %d must be ≥ 0", c.maxInFlight)
	case c.closedLoop < 0:
		return fmt.Errorf("loadgen: option closed_loop: %d must be ≥ 0", c.closedLoop)
	case c.transport != TransportReactor && c.transport != TransportNetHTTP:
		return fmt.Errorf("loadgen: option transport: %q is neither %q nor %q", c.transport, TransportReactor, TransportNetHTTP)
	case c.transport == TransportReactor && !reactorSupported:
		return fmt.Errorf("loadgen: option transport: %q needs Linux (epoll); use %q", TransportReactor, TransportNetHTTP)
	case c.closedLoop > 0 && c.maxInFlight > 0:
		return fmt.Errorf("loadgen: options closed_loop and max_in_flight exclude each other")
	}
	return CheckHeaders(c.headers)
}

// CheckHeaders refuses header names that are not HTTP tokens, names the
// client sets itself (Host, Content-Length, Content-Type, Accept,
// X-Request-Id), and values holding a control character (CR, LF and NUL
// among them: they would inject headers). Errors name the header, never its
// value.
func CheckHeaders(h http.Header) error {
	var errs []error
	for k, vs := range h {
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			errs = append(errs, fmt.Errorf("loadgen: header %q: not a valid header name", k))
		case ownHeaders[http.CanonicalHeaderKey(k)]:
			errs = append(errs, fmt.Errorf("loadgen: header %q: set by the client itself", k))
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				errs = append(errs, fmt.Errorf("loadgen: header %q: its value holds a control character (CR, LF, NUL or another)", k))
			}
		}
	}
	return errors.Join(errs...)
}

// ownHeaders are the headers every request carries from the client itself.
var ownHeaders = map[string]bool{"Host": true, "Content-Length": true, "Content-Type": true,
	"Accept": true, "Transfer-Encoding": true, "Connection": true, RequestIDHeader: true, "User-Agent": true}

// WithArm labels every Record with the arm name (default "baseline").
func WithArm(arm string) Option { return func(c *config) { c.arm = arm } }

// WithOfferedLoad labels every Record with the offered load in req/s (default
// 0); it does not change the pacing, which the Pacer decides.
func WithOfferedLoad(rps float64) Option { return func(c *config) { c.offeredLoad = rps } }

// WithRepetition labels every Record with the repetition index (default 0).
func WithRepetition(n int) Option { return func(c *config) { c.repetition = n } }

// WithModel sets the request's "model" field (default "": the field is
// omitted and the server uses the model it serves, as vLLM, SGLang and the
// simulator do).
func WithModel(m string) Option { return func(c *config) { c.model = m } }

// WithEndpoint picks /v1/completions (default) or /v1/chat/completions.
func WithEndpoint(e Endpoint) Option { return func(c *config) { c.endpoint = e } }

// WithStream sets "stream" (default true). Non-streaming responses yield one
// token event carrying usage.completion_tokens tokens at the time the body was read.
func WithStream(on bool) Option { return func(c *config) { c.stream = on } }

// WithTimeout bounds each request from send to its last byte (default 5 min);
// a request past it ends in state timeout.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithWarmup marks requests scheduled before d (from run start) as Warmup:
// they are sent but excluded from the measured window (default 0: none).
func WithWarmup(d time.Duration) Option { return func(c *config) { c.warmup = d } }

// WithMaxInFlight caps in-flight requests at n (default 0: no cap). A request
// due while n are in flight waits, in order, and is counted in
// Summary.QueuedByCap, as is every later request sent late behind it until the
// dispatcher is on time again; the wait shows in ScheduleLag and TTFT (intended).
func WithMaxInFlight(n int) Option { return func(c *config) { c.maxInFlight = n } }

// WithClosedLoop replaces open-loop pacing by n workers that each send the
// next request as soon as their previous one ends (default 0: open loop).
// ScheduledAt is then when the worker became free; the Pacer is ignored and
// Summary.Mode says "closed-loop". For saturation throughput only.
func WithClosedLoop(n int) Option { return func(c *config) { c.closedLoop = n } }

// WithIgnoreEOS sets "ignore_eos" (default true) so the server generates
// exactly max_tokens; false omits the field.
func WithIgnoreEOS(on bool) Option { return func(c *config) { c.ignoreEOS = on } }

// WithPromptText sends the completions prompt as synthesised text instead of
// token ids (default false), for servers that accept only text; the length is
// then checked against usage.prompt_tokens (Record.PromptMismatch). The chat
// endpoint always sends text.
func WithPromptText(on bool) Option { return func(c *config) { c.promptText = on } }

// WithHTTPClient sends through h (net/http) instead of the default: the
// reactor (reactor_linux.go) for plain http:// targets on Linux and
// NewHTTPClient() otherwise and for https://. Its Timeout should be 0: WithTimeout bounds each request.
func WithHTTPClient(h *http.Client) Option { return func(c *config) { c.client = h } }

// WithHeaders adds h to every request, on every transport (API keys:
// "Authorization: Bearer …"). Names must be valid and not among the
// client's own headers (CheckHeaders); Replay refuses them otherwise. The
// values are sent, never logged or recorded.
func WithHeaders(h http.Header) Option { return func(c *config) { c.headers = h.Clone() } }

// WithTLSConfig sets the TLS settings of the net/http client used for
// https:// targets (default nil: the system roots). It does not apply to a
// client given with WithHTTPClient.
func WithTLSConfig(t *tls.Config) Option { return func(c *config) { c.tls = t } }

// Transport names the HTTP client Replay uses for plain http:// targets
// (https:// always goes through net/http).
type Transport string

// The transports.
const (
	// TransportReactor is an epoll reactor (reactor_linux.go): every
	// in-flight request is a small state machine on one event loop, no
	// goroutine per request. The default on Linux.
	TransportReactor Transport = "reactor"
	// TransportNetHTTP is net/http with NewHTTPClient(). The default where
	// there is no epoll, and for https:// targets everywhere.
	TransportNetHTTP Transport = "net/http"
)

// WithTransport picks the client for plain http:// targets (default: the
// reactor on Linux, net/http elsewhere). WithHTTPClient overrides it.
func WithTransport(t Transport) Option { return func(c *config) { c.transport = t } }

// NewHTTPClient returns the net/http client used for https:// targets (and
// for http:// with WithHTTPClient(NewHTTPClient())): keep-alive connections without a
// per-host cap (an open-loop client must never queue in its own pool), no
// compression (it would delay SSE bytes), no overall timeout, and 2 KiB
// connection buffers (an SSE event is ~200 B; memory per in-flight request
// matters more than syscalls saved).
func NewHTTPClient() *http.Client {
	tr := &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   100000,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ResponseHeaderTimeout: 0,
		WriteBufferSize:       2 << 10,
		ReadBufferSize:        2 << 10,
		ForceAttemptHTTP2:     false,
	}
	return &http.Client{Transport: tr}
}
