package experiment

import (
	"strings"
	"testing"
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
