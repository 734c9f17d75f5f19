package experiment

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"

	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/internal/secret"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/servers"
)

// live is what a run expands from the environment and builds from the
// config's secrets when it starts. None of it is ever echoed: the manifest
// holds Config.redacted(), and everything written passes through scrub.
type live struct {
	// headers are request.headers with ${VAR} expanded.
	headers http.Header
	// command is server.command with ${VAR} expanded in argv and env (nil
	// for other kinds).
	command *integrate.CommandConfig
	// tls is the TLS configuration of https:// endpoints (nil: system roots).
	tls *tls.Config
	// scrub holds every secret value; it is the one function every writer
	// of the run passes its output through.
	scrub *secret.Scrubber
}

// scrubber is l's Scrubber (nil, which scrubs URL userinfo only, for a nil l).
func (l *live) scrubber() *secret.Scrubber {
	if l == nil {
		return nil
	}
	return l.scrub
}

// options are the replay options carrying l's headers and TLS settings.
func (l *live) options() []loadgen.Option {
	if l == nil {
		return nil
	}
	return []loadgen.Option{loadgen.WithHeaders(l.headers), loadgen.WithTLSConfig(l.tls)}
}

// resolveLive expands ${VAR} references (request.headers values,
// server.command argv and env values) through lookup, registers every
// header value, every expanded value and every URL password with a new
// Scrubber, and loads request.tls. Errors name the field and the variable,
// never a value.
func resolveLive(c *Config, lookup func(string) (string, bool)) (*live, error) {
	l := &live{scrub: &secret.Scrubber{}}
	var errs []error
	if len(c.Request.Headers) > 0 {
		l.headers = http.Header{}
		names := make([]string, 0, len(c.Request.Headers))
		for k := range c.Request.Headers {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			v, used, err := secret.Expand(c.Request.Headers[k], lookup)
			if err != nil {
				errs = append(errs, c.fieldError("request.headers."+k, err))
				continue
			}
			if empty := emptyRefs(c.Request.Headers[k], lookup); len(empty) > 0 {
				// An empty credential is almost surely a mistake (an export
				// that read nothing): the server would answer 401, read as
				// a failed run.
				errs = append(errs, c.fieldError("request.headers."+k, fmt.Errorf("%s: environment variable is set but empty: a header carries it as an empty credential; set it, or remove the header", strings.Join(empty, ", "))))
				continue
			}
			l.scrub.Add(used...)
			l.scrub.Add(v)
			if !httpguts.ValidHeaderFieldValue(v) {
				// Only an expansion can bring one here: validateHeaders
				// refused one written in the config.
				errs = append(errs, c.fieldError("request.headers."+k, fmt.Errorf("the value %s expands to holds a control character (CR, LF, NUL or another; a key read from a file with its line end?): no HTTP header can carry it", strings.Join(secret.Refs(c.Request.Headers[k]), ", "))))
				continue
			}
			l.headers.Set(k, v)
		}
	}
	if cmd := c.Server.Command; cmd != nil && c.Server.Kind == servers.Command {
		x := *cmd
		x.Argv = make([]string, len(cmd.Argv))
		for i, a := range cmd.Argv {
			v, used, err := secret.Expand(a, lookup)
			if err != nil {
				errs = append(errs, c.fieldError(fmt.Sprintf("server.command.argv[%d]", i), err))
			}
			l.scrub.Add(used...)
			x.Argv[i] = v
		}
		x.Env = make(map[string]string, len(cmd.Env))
		for k, a := range cmd.Env {
			v, used, err := secret.Expand(a, lookup)
			if err != nil {
				errs = append(errs, c.fieldError("server.command.env."+k, err))
			}
			l.scrub.Add(used...)
			x.Env[k] = v
		}
		l.command = &x
	}
	for _, u := range c.endpointURLs() {
		l.scrub.Add(urlPassword(u))
	}
	l.scrub.Add(urlPassword(c.Extra.OTel.Endpoint))
	for _, v := range c.Extra.OTel.Headers {
		l.scrub.Add(v)
	}
	if t := c.Request.TLS; t != nil && (t.CAFile != "" || t.InsecureSkipVerify) {
		tc, err := tlsConfig(*t, c.path(t.CAFile))
		if err != nil {
			errs = append(errs, c.fieldError("request.tls.ca_file", err))
		}
		l.tls = tc
	}
	if len(errs) > 0 {
		return nil, c.errorf(errors.Join(errs...))
	}
	return l, nil
}

// emptyRefs are the ${NAME} references in s (as written, each once) whose
// variable lookup finds set to "": names, never values.
func emptyRefs(s string, lookup func(string) (string, bool)) []string {
	var out []string
	for _, r := range secret.Refs(s) {
		if v, ok := lookup(r[2 : len(r)-1]); ok && v == "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// tlsConfig trusts the system roots plus the PEM certificates of caFile,
// or, with InsecureSkipVerify, nothing at all.
func tlsConfig(t TLSConfig, caFile string) (*tls.Config, error) {
	if t.InsecureSkipVerify {
		return &tls.Config{InsecureSkipVerify: true}, nil //nolint:gosec // asked for by request.tls.insecure_skip_verify, and warned about
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// urlPassword is the password in raw's userinfo ("" when none).
func urlPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// endpointURLs are the endpoint URLs the config names (shared and per arm).
func (c *Config) endpointURLs() []string {
	var out []string
	if e := c.Server.Endpoint; e != nil && e.URL != "" {
		out = append(out, e.URL)
	}
	for _, a := range c.Arms {
		if a.Endpoint != nil && a.Endpoint.URL != "" {
			out = append(out, a.Endpoint.URL)
		}
	}
	return out
}

// recorded is c as results.json's manifest.config_requested holds it:
// keyed as the config file is (its YAML keys, durations as "30s"), so that
// a config difference (report.ConfigKeyDiffs: compare, run --resume) names
// the key a user writes. c is echoed as is if it does not round-trip.
func (c Config) recorded() any {
	b, err := yaml.Marshal(c)
	if err != nil {
		return c
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return c
	}
	return v
}

// redacted returns a copy of c fit to echo: header values REDACTED, URL
// userinfo REDACTED. Templates such as "${OPENAI_API_KEY}" in command argv
// and env stay as written (they are names, not values).
func (c Config) redacted() Config {
	c.Request.Headers = secret.Headers(c.Request.Headers)
	if e := c.Server.Endpoint; e != nil {
		x := *e
		x.URL = secret.URL(x.URL)
		c.Server.Endpoint = &x
	}
	arms := make([]ArmConfig, len(c.Arms))
	for i, a := range c.Arms {
		if a.Endpoint != nil {
			a.Endpoint = &ArmEndpoint{URL: secret.URL(a.Endpoint.URL)}
		}
		arms[i] = a
	}
	c.Arms = arms
	return c
}

// validateHeaders checks request.headers' names and values as written (a
// control character, CR and LF among them, would inject headers; a value
// ${VAR} brings is checked once expanded, resolveLive) without quoting a
// value.
func (r RequestConfig) validateHeaders() []error {
	var errs []error
	for k, v := range r.Headers {
		if err := loadgen.CheckHeaders(http.Header{k: nil}); err != nil {
			errs = append(errs, fmt.Errorf("request.headers.%s: %w", k, err))
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			errs = append(errs, fmt.Errorf("request.headers.%s: the value holds a control character (CR, LF, NUL or another): no HTTP header can carry it", k))
		}
	}
	return errs
}
