package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/transferlab/transferlab/internal/secret"
)

// Exporter kinds accepted in Config.Exporter.
const (
	// ExporterOTLPHTTP sends OTLP/protobuf over HTTP (collector port 4318).
	ExporterOTLPHTTP = "otlp-http"
	// ExporterOTLPGRPC sends OTLP over gRPC (collector port 4317).
	ExporterOTLPGRPC = "otlp-grpc"
	// ExporterStdout writes spans and metrics as JSON to a writer (os.Stderr
	// unless WithWriter says otherwise), for debugging.
	ExporterStdout = "stdout"
)

// Histogram aggregations accepted in Config.Histogram.
const (
	// HistogramExplicit uses the explicit bucket boundaries the GenAI
	// semantic conventions advise (README.md lists them). The default.
	HistogramExplicit = "explicit"
	// HistogramExponential uses base-2 exponential histograms (160 buckets,
	// scale chosen by the SDK), finer at millisecond ITLs than the advised buckets.
	HistogramExponential = "exponential"
)

// Defaults applied by Config.Effective.
const (
	// DefaultExporter is the exporter used when Config.Exporter is empty.
	DefaultExporter = ExporterOTLPHTTP
	// DefaultShutdownTimeout bounds Exporter.Shutdown when Config.ShutdownTimeout is 0.
	DefaultShutdownTimeout = 5 * time.Second
	// DefaultHistogram is the histogram aggregation when Config.Histogram is empty.
	DefaultHistogram = HistogramExplicit
)

// Config is the `otel:` section of an experiment config. Export is off unless
// Enabled is true. Empty fields fall back to the standard OpenTelemetry
// environment variables, read by the SDK exporters themselves
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_INSECURE,
// OTEL_EXPORTER_OTLP_CERTIFICATE, OTEL_EXPORTER_OTLP_TIMEOUT,
// OTEL_METRIC_EXPORT_INTERVAL, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES),
// then to the SDK defaults.
type Config struct {
	// Enabled switches export on. Default false: nothing is exported and
	// Start returns an Exporter whose methods do nothing.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Exporter is otlp-http (default), otlp-grpc or stdout.
	Exporter string `yaml:"exporter,omitempty" json:"exporter,omitempty"`
	// Endpoint is the collector's base URL, e.g. "http://localhost:4318"
	// (otlp-http; /v1/traces and /v1/metrics are appended to its path, as for
	// OTEL_EXPORTER_OTLP_ENDPOINT) or "http://localhost:4317" (otlp-grpc; no
	// path). The scheme decides TLS: https uses TLS with the system roots (or
	// OTEL_EXPORTER_OTLP_CERTIFICATE), http sends plaintext. Empty: the
	// environment, else localhost:4318 / localhost:4317 over TLS.
	Endpoint string `yaml:"endpoint,omitempty" json:"endpoint,omitempty"`
	// Headers are sent with every export request (e.g. an API key); they
	// replace OTEL_EXPORTER_OTLP_HEADERS when set.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Insecure forces plaintext for an endpoint without a scheme taken from
	// the environment. It contradicts an https Endpoint.
	Insecure bool `yaml:"insecure,omitempty" json:"insecure,omitempty"`
	// Timeout bounds one export request, retries included. 0: the
	// environment (OTEL_EXPORTER_OTLP_TIMEOUT), else the SDK's 10 s.
	Timeout time.Duration `yaml:"timeout,omitempty" json:"timeout_ns,omitempty"`
	// ShutdownTimeout bounds Exporter.Shutdown as a whole (final span flush
	// and final metric export run side by side under this one deadline).
	// 0: DefaultShutdownTimeout (5 s).
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout,omitempty" json:"shutdown_timeout_ns,omitempty"`
	// MetricInterval is the periodic metric export interval. 0: the
	// environment (OTEL_METRIC_EXPORT_INTERVAL), else the SDK's 60 s.
	// Shutdown always exports a last time.
	MetricInterval time.Duration `yaml:"metric_interval,omitempty" json:"metric_interval_ns,omitempty"`
	// Histogram is explicit (default; the conventions' advised buckets) or
	// exponential (base-2 exponential histograms).
	Histogram string `yaml:"histogram,omitempty" json:"histogram,omitempty"`
}

// Effective returns c with the defaults of this package filled in
// (Exporter, ShutdownTimeout, Histogram). Fields the SDK defaults from the
// environment (Endpoint, Headers, Timeout, MetricInterval) stay empty.
func (c Config) Effective() Config {
	if c.Exporter == "" {
		c.Exporter = DefaultExporter
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Histogram == "" {
		c.Histogram = DefaultHistogram
	}
	return c
}

// Validate reports every problem of c at once (errors.Join), each naming its
// field as `otel.<field>`. A disabled Config is still checked, so a typo is
// found before someone switches export on.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("otel.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	switch c.Exporter {
	case "", ExporterOTLPHTTP, ExporterOTLPGRPC, ExporterStdout:
	default:
		bad("exporter", "%q is not one of %s, %s, %s", c.Exporter, ExporterOTLPHTTP, ExporterOTLPGRPC, ExporterStdout)
	}
	switch c.Histogram {
	case "", HistogramExplicit, HistogramExponential:
	default:
		bad("histogram", "%q is not one of %s, %s", c.Histogram, HistogramExplicit, HistogramExponential)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		switch {
		case err != nil:
			bad("endpoint", "%q is not a URL: %v", c.Endpoint, err)
		case u.Scheme != "http" && u.Scheme != "https":
			bad("endpoint", "%q needs an http:// or https:// scheme (e.g. http://localhost:4318)", c.Endpoint)
		case u.Host == "":
			bad("endpoint", "%q has no host", c.Endpoint)
		case c.Exporter == ExporterOTLPGRPC && strings.Trim(u.Path, "/") != "":
			bad("endpoint", "%q: an otlp-grpc endpoint takes no path", c.Endpoint)
		case c.Exporter == ExporterStdout:
			bad("endpoint", "%q is set but the stdout exporter sends nowhere", c.Endpoint)
		case c.Insecure && u.Scheme == "https":
			bad("insecure", "true contradicts the https endpoint %q", c.Endpoint)
		}
	}
	for k, v := range c.Headers {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t\r\n:") {
			bad("headers", "%q is not a valid header name", k)
		} else if !httpguts.ValidHeaderFieldValue(v) {
			// Named by its key; the value may be a secret.
			bad("headers."+k, "the value holds a control character (CR, LF, NUL or another): no HTTP header can carry it")
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"timeout", c.Timeout}, {"shutdown_timeout", c.ShutdownTimeout}, {"metric_interval", c.MetricInterval}} {
		if d.v < 0 {
			bad(d.field, "%v is negative", d.v)
		}
	}
	return errors.Join(errs...)
}

// Redacted is the placeholder that replaces header values and URL userinfo
// when a Config is echoed (results.json manifest, logs): headers usually
// carry API keys, and an endpoint may carry user:password@.
const Redacted = secret.Redacted

// redacted returns c with every header value and the endpoint's userinfo
// replaced by Redacted.
func (c Config) redacted() Config {
	c.Headers = secret.Headers(c.Headers)
	if c.Endpoint != "" {
		c.Endpoint = secret.URL(c.Endpoint)
	}
	return c
}

// configFields has Config's fields without its methods, so the marshallers
// below do not call themselves.
type configFields Config

// MarshalJSON encodes c with header values redacted, so echoing the
// effective config into results.json never leaks a collector API key.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(configFields(c.redacted()))
}

// MarshalYAML encodes c with header values redacted, as MarshalJSON.
func (c Config) MarshalYAML() (any, error) {
	return configFields(c.redacted()), nil
}

// ApplyFlag returns base changed by the value of a --otel command-line flag,
// validated; the flag wins over the config file:
//
//	on | true               enable with base's settings
//	off | false             disable
//	stdout                  enable, stdout exporter (no endpoint)
//	otlp-http | otlp-grpc   enable with that exporter, base's endpoint (or the environment's)
//	otlp-http=URL           enable with that exporter and endpoint (likewise otlp-grpc=URL)
//	http(s)://host:port     enable otlp-http with that endpoint
func ApplyFlag(base Config, value string) (Config, error) {
	c := base
	kind, endpoint, hasEndpoint := strings.Cut(value, "=")
	switch {
	case value == "on" || value == "true":
		c.Enabled = true
	case value == "off" || value == "false":
		c.Enabled = false
	case value == ExporterStdout:
		c.Enabled, c.Exporter, c.Endpoint = true, ExporterStdout, ""
	case kind == ExporterOTLPHTTP || kind == ExporterOTLPGRPC:
		c.Enabled, c.Exporter = true, kind
		if hasEndpoint {
			c.Endpoint = endpoint
		}
	case strings.HasPrefix(value, "http://") || strings.HasPrefix(value, "https://"):
		c.Enabled, c.Exporter, c.Endpoint = true, ExporterOTLPHTTP, value
	default:
		return base, fmt.Errorf("--otel %q: want on, off, stdout, otlp-http[=URL], otlp-grpc[=URL] or an http(s):// endpoint", value)
	}
	if err := c.Validate(); err != nil {
		return base, fmt.Errorf("--otel %q: %w", value, err)
	}
	return c, nil
}
