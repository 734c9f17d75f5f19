package experiment

import (
	"slices"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/report"
)

// TestResolveLiveNamesFileFieldLine: an unset ${VAR} in request.headers or
// server.command, and an unreadable request.tls.ca_file, are config errors
// `config FILE: field (line N): message`, naming the variable, never a value.
func TestResolveLiveNamesFileFieldLine(t *testing.T) {
	const text = `name: x
trace: {path: t.csv}
load: {rates_rps: [1], duration: 1s}
server:
  kind: command
  command:
    argv: [srv, "--key=${TL_TEST_UNSET_B}"]
    env:
      API_KEY: "${TL_TEST_UNSET_C}"
request:
  headers:
    Authorization: "Bearer ${TL_TEST_SET}"
    X-Api-Key: "${TL_TEST_UNSET_A}"
  tls: {ca_file: no-such-ca.pem}
arms: [{name: baseline}]
`
	cfg, err := Parse(strings.NewReader(text), "configs/secret.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(name string) (string, bool) {
		if name == "TL_TEST_SET" {
			return "sk-set-SECRET-77", true
		}
		return "", false
	}
	_, err = resolveLive(cfg, lookup)
	if err == nil {
		t.Fatal("resolveLive accepted unset variables")
	}
	msg := err.Error()
	for _, want := range []string{
		"config configs/secret.yaml: ",
		"request.headers.X-Api-Key (line 13): ${TL_TEST_UNSET_A}: environment variable is not set",
		"server.command.argv[1] (line 7): ${TL_TEST_UNSET_B}: environment variable is not set",
		"server.command.env.API_KEY (line 9): ${TL_TEST_UNSET_C}: environment variable is not set",
		"request.tls.ca_file (line 14): ",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "sk-set-SECRET-77") {
		t.Errorf("error quotes a value: %s", msg)
	}
}

// TestHeaderControlCharacterIsConfigError: a CR, LF or other control
// character in a header value, written in the config or brought by a
// ${VAR} (a key file read with its Windows line end), is a config error
// naming the file, the field and the header, never the value; before, the
// expanded one reached the server probe and read as "unreachable".
func TestHeaderControlCharacterIsConfigError(t *testing.T) {
	const text = `name: x
trace: {path: t.csv}
load: {rates_rps: [1], duration: 1s}
server: {kind: sim}
request:
  headers:
    Authorization: "Bearer ${TL_TEST_CRLF}"
    X-Fine: "${TL_TEST_FINE}"
arms: [{name: baseline}]
`
	cfg, err := Parse(strings.NewReader(text), "configs/h.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(name string) (string, bool) {
		switch name {
		case "TL_TEST_CRLF":
			return "sk-crlf-SECRET-99\r\n", true
		case "TL_TEST_FINE":
			return "fine\tvalue", true // a tab is allowed in a header value
		}
		return "", false
	}
	_, err = resolveLive(cfg, lookup)
	if err == nil {
		t.Fatal("resolveLive accepted a header value holding CR LF")
	}
	msg := err.Error()
	for _, want := range []string{"config configs/h.yaml: ", "request.headers.Authorization (line 7): ", "control character", "${TL_TEST_CRLF}"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "sk-crlf") || strings.Contains(msg, "X-Fine") || strings.Contains(msg, "fine\tvalue") {
		t.Errorf("error quotes a value or blames a good header: %s", msg)
	}

	// Written in the config: refused by Parse, request.headers and otel.headers alike.
	const literal = `name: x
trace: {path: t.csv}
load: {rates_rps: [1], duration: 1s}
server: {kind: sim}
request:
  headers: {X-Key: "sk-lit-SECRET\nInjected: 1"}
otel:
  headers: {Authorization: "Bearer sk-otel-SECRET\r"}
arms: [{name: baseline}]
`
	_, err = Parse(strings.NewReader(literal), "configs/l.yaml", t.TempDir())
	if err == nil {
		t.Fatal("Parse accepted header values holding CR or LF")
	}
	msg = err.Error()
	for _, want := range []string{"configs/l.yaml", "request.headers.X-Key (line 6): ", "otel.headers.Authorization (line 8): ", "control character"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "SECRET") || strings.Contains(msg, "Injected") {
		t.Errorf("error quotes a value: %s", msg)
	}
}

// TestRecordedConfigKeys: manifest.config_requested is keyed as the config
// file is, and on every shipped config it says what the Go-field-named
// record older results files hold says (report.ConfigKeyDiffs translates
// those): no key differs, and every key is one the file's YAML could hold.
func TestRecordedConfigKeys(t *testing.T) {
	forShippedConfigs(t, func(t *testing.T, f string) {
		cfg, _, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		rec := cfg.redacted().recorded()
		top, ok := rec.(map[string]any)
		if !ok {
			t.Fatalf("recorded config is a %T, want a map of the config's keys", rec)
		}
		for k := range top {
			if k != strings.ToLower(k) {
				t.Errorf("recorded top-level key %q is not a config key", k)
			}
		}
		legacy := report.Results{Manifest: report.Manifest{Requested: cfg.redacted()}}
		keyed := report.Results{Manifest: report.Manifest{Requested: rec}}
		// server.reference's hook_timings and hook_window had no JSON
		// form (json:"-"): the Go-field-named record lacked them.
		d := slices.DeleteFunc(report.ConfigKeyDiffs(legacy, keyed), func(k string) bool {
			return strings.HasPrefix(k, "server.reference.hook_timings (A=not set,") || strings.HasPrefix(k, "server.reference.hook_window (A=not set,")
		})
		if len(d) > 1 || len(d) == 1 && !strings.Contains(d[0], "no recorded config key differs") {
			t.Errorf("the config recorded by Go field names and by its keys differ: %q", d)
		}
	})
}

// TestHeaderEmptyVariableIsConfigError: a header's ${VAR} that is set but
// empty (KEY="" exported by mistake) is a config error naming the file,
// the field, its line and the variable, never a value; before, the run sent
// "Bearer " and the server's 401s read as failed requests.
func TestHeaderEmptyVariableIsConfigError(t *testing.T) {
	const text = `name: x
trace: {path: t.csv}
load: {rates_rps: [1], duration: 1s}
server: {kind: sim}
request:
  headers:
    Authorization: "Bearer ${TL_TEST_EMPTY}"
    X-Fine: "${TL_TEST_FINE}"
arms: [{name: baseline}]
`
	cfg, err := Parse(strings.NewReader(text), "configs/e.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(name string) (string, bool) {
		switch name {
		case "TL_TEST_EMPTY":
			return "", true
		case "TL_TEST_FINE":
			return "fine-SECRET-value", true
		}
		return "", false
	}
	_, err = resolveLive(cfg, lookup)
	if err == nil {
		t.Fatal("resolveLive accepted a header whose ${TL_TEST_EMPTY} is empty")
	}
	msg := err.Error()
	want := "config configs/e.yaml: request.headers.Authorization (line 7): ${TL_TEST_EMPTY}: environment variable is set but empty"
	if !strings.Contains(msg, want) {
		t.Errorf("error does not say %q:\n%s", want, msg)
	}
	if strings.Contains(msg, "X-Fine") || strings.Contains(msg, "fine-SECRET-value") {
		t.Errorf("error names the fine header or quotes a value: %s", msg)
	}
}

// TestDecisionFieldLines: an invalid decision.* field is a config error
// naming the field and its own line, not the decision block's line.
func TestDecisionFieldLines(t *testing.T) {
	const text = `name: x
trace: {path: t.csv}
load: {rates_rps: [1], duration: 1s}
server: {kind: sim}
arms: [{name: baseline}]
decision:
  metric: e2e
  percentile: 42
  regression_margin: -0.1
  interval_level: 2
  resamples: 3
  expected_resolution: 2
`
	_, err := Parse(strings.NewReader(text), "configs/d.yaml", t.TempDir())
	if err == nil {
		t.Fatal("Parse accepted an invalid decision block")
	}
	msg := err.Error()
	for _, want := range []string{
		"decision.percentile (line 8): 42 is not one of 50, 90, 95, 99 or 99.9",
		"decision.regression_margin (line 9): -0.1 not in [0, 1)",
		"decision.interval_level (line 10): 2 not in (0, 1)",
		"decision.resamples (line 11): 3 < 100",
		"decision.expected_resolution (line 12): ",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "line 6") {
		t.Errorf("error names the decision block's line 6:\n%s", msg)
	}
}

// TestClampContextOneRefused: trace.clamp_context 1 is refused naming the
// field and its line (traces.ClampContext would treat it as 2 without a
// word), as trace stats --clamp-context 1 is.
func TestClampContextOneRefused(t *testing.T) {
	for _, tc := range []struct {
		clamp string
		want  string
	}{
		{"1", "trace.clamp_context (line 2): must be 0 (no clamp) or ≥ 2 (the smallest servable context: 1 prompt + 1 generated token), got 1"},
		{"-3", "trace.clamp_context (line 2): must be 0 (no clamp) or ≥ 2"},
	} {
		text := "name: x\ntrace: {path: t.csv, clamp_context: " + tc.clamp + "}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: sim}\narms: [{name: baseline}]\n"
		_, err := Parse(strings.NewReader(text), "configs/c.yaml", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("clamp_context %s: err %v, want %q", tc.clamp, err, tc.want)
		}
	}
	text := "name: x\ntrace: {path: t.csv, clamp_context: 2}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: sim}\narms: [{name: baseline}]\n"
	if _, err := Parse(strings.NewReader(text), "configs/c.yaml", t.TempDir()); err != nil && strings.Contains(err.Error(), "clamp_context") {
		t.Errorf("clamp_context 2 refused: %v", err)
	}
}
