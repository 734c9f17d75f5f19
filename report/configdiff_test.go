package report

import (
	"slices"
	"strings"
	"testing"
)

// TestConfigKeyDiffs: configs that differ are named key by key, with both
// values (durations as durations, lists as lists), sorted; a block only one
// side sets is named once; a secret's values (a header, a token, a URL's
// credentials) never appear; alike configs give one entry saying so, and a
// run without a recorded config gives nil.
func TestConfigKeyDiffs(t *testing.T) {
	t.Parallel()
	// As the config file keys it (config_requested since it is), and as
	// results.json files before recorded it, Go field names and durations
	// in nanoseconds: both are named by the config's keys.
	cfg := func(rates []any, dur string, auth, url, model string) any {
		return map[string]any{
			"load":            map[string]any{"rates_rps": rates, "duration": dur},
			"request":         map[string]any{"headers": map[string]any{"Authorization": auth}, "model": model},
			"server":          map[string]any{"endpoint": map[string]any{"url": url}},
			"arms":            []any{map[string]any{"name": "baseline", "api_token": auth}},
			"capacity_search": map[string]any{"probe_warmup": dur},
		}
	}
	legacy := func(rates []any, dur float64, auth, url, model string) any {
		return map[string]any{
			"Load":    map[string]any{"RatesRPS": rates, "Duration": dur},
			"Request": map[string]any{"Headers": map[string]any{"Authorization": auth}, "Model": model},
			"Server":  map[string]any{"Endpoint": map[string]any{"URL": url}},
			"Arms":    []any{map[string]any{"Name": "baseline", "APIToken": auth}},
			"Extra":   map[string]any{"CapacitySearch": map[string]any{"ProbeWarmup": dur}},
		}
	}
	want := []string{
		"arms[0].api_token (values not shown: secret)",
		"capacity_search.probe_warmup (A=8s, B=4s)",
		"load.duration (A=8s, B=4s)",
		"load.rates_rps (A=[3 10 24], B=[10])",
		"request.headers.Authorization (values not shown: secret)",
		"server.endpoint.url (A=https://REDACTED@h.example/v1?api_key=REDACTED, B=https://REDACTED@h.example/v1?api_key=REDACTED)",
		"server.sim (A=not set, B=set)",
	}
	var a, b Results
	for _, tc := range []struct {
		name string
		a, b any
	}{
		{"config keys", cfg([]any{3, 10, 24}, "8s", "Bearer sk-AAAA", "https://alice:pw-one@h.example/v1?api_key=q-one", "m"), cfg([]any{10}, "4s", "Bearer sk-BBBB", "https://bob:pw-two@h.example/v1?api_key=q-two", "m")},
		{"Go field names", legacy([]any{3, 10, 24}, 8e9, "Bearer sk-AAAA", "https://alice:pw-one@h.example/v1?api_key=q-one", "m"), legacy([]any{10}, 4e9, "Bearer sk-BBBB", "https://bob:pw-two@h.example/v1?api_key=q-two", "m")},
		{"one of each", legacy([]any{3, 10, 24}, 8e9, "Bearer sk-AAAA", "https://alice:pw-one@h.example/v1?api_key=q-one", "m"), cfg([]any{10}, "4s", "Bearer sk-BBBB", "https://bob:pw-two@h.example/v1?api_key=q-two", "m")},
	} {
		a.Manifest.Requested, b.Manifest.Requested = tc.a, tc.b
		sim := func(c any) map[string]any {
			for k, v := range c.(map[string]any) {
				if strings.EqualFold(k, "server") {
					return v.(map[string]any)
				}
			}
			return nil
		}
		sim(a.Manifest.Requested)["sim"] = nil
		sim(b.Manifest.Requested)["sim"] = map[string]any{"noise": map[string]any{"run_sigma": 0.03, "seed": 1}}
		if got := ConfigKeyDiffs(a, b); !slices.Equal(got, want) {
			t.Errorf("%s: ConfigKeyDiffs:\n got %q\nwant %q", tc.name, got, want)
		}
	}
	if got := ConfigKeyDiffs(Results{Manifest: Manifest{Requested: legacy([]any{3}, 8e9, "x", "u", "m")}}, Results{Manifest: Manifest{Requested: cfg([]any{3}, "8s", "x", "u", "m")}}); len(got) != 1 || !strings.Contains(got[0], "no recorded config key differs") {
		t.Errorf("one config recorded both ways: %q", got)
	}
	a.Manifest.Requested = cfg([]any{3, 10, 24}, "8s", "Bearer sk-AAAA", "https://alice:pw-one@h.example/v1?api_key=q-one", "m")
	b.Manifest.Requested = cfg([]any{10}, "4s", "Bearer sk-BBBB", "https://bob:pw-two@h.example/v1?api_key=q-two", "m")
	got := ConfigKeyDiffs(a, b)
	all := strings.Join(got, "\n")
	for _, secret := range []string{"sk-AAAA", "sk-BBBB", "alice", "bob", "pw-one", "pw-two", "q-one", "q-two"} {
		if strings.Contains(all, secret) {
			t.Errorf("ConfigKeyDiffs shows %q: %q", secret, got)
		}
	}

	b.Manifest.Requested = a.Manifest.Requested
	if got := ConfigKeyDiffs(a, b); len(got) != 1 || !strings.Contains(got[0], "no recorded config key differs") {
		t.Errorf("alike configs: %q", got)
	}
	b.Manifest.Requested = nil
	if got := ConfigKeyDiffs(a, b); got != nil {
		t.Errorf("B recorded no config: %q, want nil", got)
	}
}

// TestLegacyKey: Go field paths of older results files become the config's keys.
func TestLegacyKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Load.MaxRequests":                 "load.max_requests",
		"Extra.CapacitySearch.ProbeWarmup": "capacity_search.probe_warmup",
		"Load.RatesRPS":                    "load.rates_rps",
		"Request.TLS.CAFile":               "request.tls.ca_file",
		"SLO.TTFTMs":                       "slo.ttft_ms",
		"Arms[1].Override.Target":          "arms[1].override.target",
		"Request.Headers.X-Api-Key":        "request.headers.X-Api-Key",
		"Server.Command.Env.HF_TOKEN":      "server.command.env.HF_TOKEN",
		"Server.Sim.noise.run_sigma":       "server.sim.noise.run_sigma",
		"Extra.Resolution.AAReplicate":     "resolution.aa_replicate",
		"Server.Command.Argv":              "server.command.argv",
	} {
		if got := legacyKey(in); got != want {
			t.Errorf("legacyKey(%q) = %q, want %q", in, got, want)
		}
	}
}
