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
	cfg := func(rates []any, dur float64, auth, url, model string) any {
		return map[string]any{
			"Load":    map[string]any{"RatesRPS": rates, "Duration": dur},
			"Request": map[string]any{"Headers": map[string]any{"Authorization": auth}, "Model": model},
			"Server":  map[string]any{"Endpoint": map[string]any{"URL": url}},
			"Arms":    []any{map[string]any{"Name": "baseline", "APIToken": auth}},
		}
	}
	var a, b Results
	a.Manifest.Requested = cfg([]any{3, 10, 24}, 8e9, "Bearer sk-AAAA", "https://alice:pw-one@h.example/v1?api_key=q-one", "m")
	b.Manifest.Requested = cfg([]any{10}, 4e9, "Bearer sk-BBBB", "https://bob:pw-two@h.example/v1?api_key=q-two", "m")
	a.Manifest.Requested.(map[string]any)["Server"].(map[string]any)["Sim"] = nil
	b.Manifest.Requested.(map[string]any)["Server"].(map[string]any)["Sim"] = map[string]any{"noise": map[string]any{"run_sigma": 0.03, "seed": 1}}

	got := ConfigKeyDiffs(a, b)
	want := []string{
		"Arms[0].APIToken (values not shown: secret)",
		"Load.Duration (A=8s, B=4s)",
		"Load.RatesRPS (A=[3 10 24], B=[10])",
		"Request.Headers.Authorization (values not shown: secret)",
		"Server.Endpoint.URL (A=https://REDACTED@h.example/v1?api_key=REDACTED, B=https://REDACTED@h.example/v1?api_key=REDACTED)",
		"Server.Sim (A=not set, B=set)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ConfigKeyDiffs:\n got %q\nwant %q", got, want)
	}
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
