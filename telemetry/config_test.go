package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // substrings of the error; none: valid
	}{
		{"zero value is valid (off)", Config{}, nil},
		{"http endpoint", Config{Enabled: true, Endpoint: "http://localhost:4318"}, nil},
		{"http endpoint with base path", Config{Enabled: true, Endpoint: "https://otlp.example.com/otlp"}, nil},
		{"grpc endpoint", Config{Enabled: true, Exporter: ExporterOTLPGRPC, Endpoint: "http://localhost:4317"}, nil},
		{"stdout", Config{Enabled: true, Exporter: ExporterStdout}, nil},
		{"unknown exporter", Config{Exporter: "zipkin"}, []string{"otel.exporter", "zipkin"}},
		{"endpoint without scheme", Config{Endpoint: "localhost:4318"}, []string{"otel.endpoint", "scheme"}},
		{"endpoint without host", Config{Endpoint: "http://"}, []string{"otel.endpoint", "no host"}},
		{"grpc endpoint with path", Config{Exporter: ExporterOTLPGRPC, Endpoint: "http://c:4317/v1"}, []string{"otel.endpoint", "no path"}},
		{"stdout with endpoint", Config{Exporter: ExporterStdout, Endpoint: "http://c:4318"}, []string{"otel.endpoint", "stdout"}},
		{"insecure with https", Config{Insecure: true, Endpoint: "https://c:4318"}, []string{"otel.insecure"}},
		{"bad header name", Config{Headers: map[string]string{"a b": "x"}}, []string{"otel.headers"}},
		{"bad histogram", Config{Histogram: "hdr"}, []string{"otel.histogram"}},
		{"negative durations, all reported", Config{Timeout: -1, ShutdownTimeout: -1, MetricInterval: -1},
			[]string{"otel.timeout", "otel.shutdown_timeout", "otel.metric_interval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error mentioning %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestConfigYAML(t *testing.T) {
	t.Parallel()
	const doc = `
enabled: true
exporter: otlp-grpc
endpoint: http://collector:4317
headers: {authorization: "Bearer x"}
timeout: 3s
shutdown_timeout: 2s
metric_interval: 15s
histogram: exponential
`
	var cfg Config
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	want := Config{Enabled: true, Exporter: ExporterOTLPGRPC, Endpoint: "http://collector:4317",
		Headers: map[string]string{"authorization": "Bearer x"}, Timeout: 3 * time.Second,
		ShutdownTimeout: 2 * time.Second, MetricInterval: 15 * time.Second, Histogram: HistogramExponential}
	if cfg.Endpoint != want.Endpoint || cfg.Exporter != want.Exporter || cfg.Timeout != want.Timeout ||
		cfg.ShutdownTimeout != want.ShutdownTimeout || cfg.MetricInterval != want.MetricInterval ||
		cfg.Histogram != want.Histogram || cfg.Headers["authorization"] != "Bearer x" || !cfg.Enabled {
		t.Errorf("decoded %+v, want %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}

	dec = yaml.NewDecoder(strings.NewReader("enabled: true\nendpiont: http://x:4318\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err == nil || !strings.Contains(err.Error(), "endpiont") {
		t.Errorf("unknown key: Decode = %v, want an error naming it", err)
	}
}

func TestConfigEffective(t *testing.T) {
	t.Parallel()
	got := Config{}.Effective()
	if got.Exporter != DefaultExporter || got.ShutdownTimeout != DefaultShutdownTimeout || got.Histogram != DefaultHistogram {
		t.Errorf("Effective() = %+v", got)
	}
	if got.Endpoint != "" || got.Timeout != 0 || got.MetricInterval != 0 {
		t.Errorf("Effective() filled environment-defaulted fields: %+v", got)
	}
}

func TestStdoutExporter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var out bytes.Buffer
	e, err := Start(ctx, Config{Enabled: true, Exporter: ExporterStdout}, RunInfo{Name: "debug", Model: "m"}, WithWriter(&out))
	if err != nil {
		t.Fatal(err)
	}
	feedCell(ctx, t, e, 3)
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Name":"transferlab.run"`, `"Name":"text_completion m"`, MetricOperationDuration, MetricRequests} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout output lacks %s", want)
		}
	}
}

// TestConfigEchoRedactsHeaders: headers carry API keys; an echoed config
// (JSON manifest or YAML) must not.
func TestConfigEchoRedactsHeaders(t *testing.T) {
	t.Parallel()
	cfg := Config{Enabled: true, Endpoint: "https://user:pw-s3cret@otlp.example.com", Headers: map[string]string{"Authorization": "Bearer s3cret"}}
	j, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"json": string(j), "yaml": string(y)} {
		if strings.Contains(out, "s3cret") || !strings.Contains(out, Redacted) || !strings.Contains(out, "otlp.example.com") {
			t.Errorf("%s echo = %s, want the endpoint kept and the header value redacted", name, out)
		}
	}
	if cfg.Headers["Authorization"] != "Bearer s3cret" || cfg.Endpoint != "https://user:pw-s3cret@otlp.example.com" {
		t.Error("marshalling changed the live config's headers or endpoint")
	}
	// Round trip of the YAML echo keeps every other field.
	var back Config
	if err := yaml.Unmarshal(y, &back); err != nil {
		t.Fatal(err)
	}
	if back.Endpoint != "https://REDACTED@otlp.example.com" || !back.Enabled {
		t.Errorf("YAML echo decoded to %+v", back)
	}
}

func TestApplyFlag(t *testing.T) {
	t.Parallel()
	base := Config{Exporter: ExporterOTLPGRPC, Endpoint: "http://collector:4317", Headers: map[string]string{"k": "v"}}
	for _, tc := range []struct {
		value                  string
		wantOn                 bool
		wantExporter, wantEndp string
		wantErr                string
	}{
		{"on", true, ExporterOTLPGRPC, "http://collector:4317", ""},
		{"off", false, ExporterOTLPGRPC, "http://collector:4317", ""},
		{"stdout", true, ExporterStdout, "", ""},
		{"otlp-grpc", true, ExporterOTLPGRPC, "http://collector:4317", ""},
		{"otlp-http=http://localhost:4318", true, ExporterOTLPHTTP, "http://localhost:4318", ""},
		{"https://otlp.example.com/otlp", true, ExporterOTLPHTTP, "https://otlp.example.com/otlp", ""},
		{"otlp-grpc=http://c:4317/v1", false, "", "", "no path"},
		{"zipkin", false, "", "", "want on, off"},
		{"otlp-http=localhost:4318", false, "", "", "scheme"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Parallel()
			got, err := ApplyFlag(base, tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--otel") {
					t.Fatalf("ApplyFlag(%q) = %+v, %v; want an error naming --otel and %q", tc.value, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Enabled != tc.wantOn || got.Exporter != tc.wantExporter || got.Endpoint != tc.wantEndp || got.Headers["k"] != "v" {
				t.Errorf("ApplyFlag(%q) = %+v, want enabled=%v exporter=%s endpoint=%s, headers kept", tc.value, got, tc.wantOn, tc.wantExporter, tc.wantEndp)
			}
		})
	}
	// From a stdout base, "otlp-http" leaves the endpoint to the environment.
	got, err := ApplyFlag(Config{Exporter: ExporterStdout}, ExporterOTLPHTTP)
	if err != nil || got.Endpoint != "" || got.Exporter != ExporterOTLPHTTP || !got.Enabled {
		t.Errorf("from stdout: %+v, %v", got, err)
	}
}
