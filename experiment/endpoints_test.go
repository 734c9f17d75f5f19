package experiment

import (
	"strings"
	"testing"
)

// TestEndpointNoticePinsReadable: the pins a user declares reach the report
// as written ("vllm >=0.6.3", "a&b"), not JSON-escaped ("\u003e"), keys
// sorted, nested values as JSON, URL credentials redacted.
func TestEndpointNoticePinsReadable(t *testing.T) {
	t.Parallel()
	c := &Config{Arms: []ArmConfig{{Name: "baseline"}}, Server: ServerConfig{Endpoint: &EndpointConfig{URL: "http://h:1", Pins: map[string]any{
		"version": ">=0.6.3 <0.7", "flags": "--a&b", "gpus": map[string]any{"kind": "H200<x>", "n": 8},
		"registry": "https://user:hunter2@r.example/img",
	}}}}
	got := endpointNotice(c, nil)
	want := `server.endpoint.pins {flags: --a&b, gpus: {"kind":"H200<x>","n":8}, registry: https://REDACTED@r.example/img, version: >=0.6.3 <0.7}`
	if !strings.Contains(got, want) {
		t.Errorf("notice %q\nlacks %q", got, want)
	}
	for _, bad := range []string{`\u003e`, `\u003c`, `\u0026`, "hunter2"} {
		if strings.Contains(got, bad) {
			t.Errorf("notice %q holds %q", got, bad)
		}
	}
}
