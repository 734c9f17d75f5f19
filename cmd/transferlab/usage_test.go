package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagPlaceholders: pflag shows a backquoted word of a flag's usage as
// the flag's value placeholder in --help (`--shard i/N`); a backquoted
// phrase (a command quoted for emphasis) would read as the value to give.
func TestFlagPlaceholders(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " \t") {
				t.Errorf("%s --%s: placeholder %q (a backquoted phrase in its usage)", c.CommandPath(), f.Name, name)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
}

// TestTrustedInputSaid: every command that runs a config's code says, in
// its --help, that the config (and the kernels it names) is trusted input.
func TestTrustedInputSaid(t *testing.T) {
	for _, name := range []string{"run", "validate", "k8s"} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs([]string{name, "--help"})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "trusted input") {
			t.Errorf("%s --help does not say the config is trusted input:\n%s", name, out.String())
		}
	}
}

// TestK8sCommandFlags: the k8s command passes its run flags to the shards
// and the shared start it was given, and refuses two starts (the manifest
// itself is shard.KubeManifest's, tested there).
func TestK8sCommandFlags(t *testing.T) {
	dir := t.TempDir()
	trace, err := os.ReadFile(filepath.Join("..", "..", "configs", "traces", "prefill-heavy-4000in-8out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), trace, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "k.yaml")
	text := "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: endpoint, endpoint: {url: \"http://10.0.0.1:8000\"}}\narms: [{name: baseline}]\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	k8s := func(extra ...string) (string, error) {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append([]string{"k8s", cfg, "--shards", "2", "--image", "img:1", "--out-claim", "claim"}, extra...))
		err := root.Execute()
		return out.String(), err
	}
	out, err := k8s("--start-at", "2026-12-01T22:00:00Z", "--clock-ref", "ntp.example:123", "--cell-gap", "3s")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2026-12-01T22:00:00Z", "--clock-ref", "ntp.example:123", "--cell-gap", "3s"} {
		if !strings.Contains(out, want) {
			t.Errorf("manifest lacks %q:\n%.800s", want, out)
		}
	}
	if _, err := k8s("--start-at", "2026-12-01T22:00:00Z", "--start-in", "1m"); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Errorf("--start-at with --start-in: %v, want refused", err)
	}
}

// TestMissingArgumentSaysUsage: a missing or extra positional argument
// names it and prints the command's usage line, not cobra's "accepts 1
// arg(s), received 0".
func TestMissingArgumentSaysUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "run: CONFIG.yaml missing: usage: transferlab run CONFIG.yaml"},
		{[]string{"run", "a.yaml", "b.yaml"}, `run: unexpected argument(s) ["b.yaml"]: it takes CONFIG.yaml: usage: transferlab run`},
		{[]string{"compare", "a.json"}, "compare: B.json missing: usage: transferlab compare A.json B.json [flags]"},
		{[]string{"validate"}, "validate: CONFIG.yaml missing: usage: transferlab validate CONFIG.yaml"},
		{[]string{"k8s"}, "k8s: CONFIG.yaml missing: usage: transferlab k8s CONFIG.yaml"},
		{[]string{"profile"}, "profile: FILE missing: usage: transferlab profile FILE [flags]"},
		{[]string{"trace", "stats"}, "trace stats: FILE missing: usage: transferlab trace stats FILE [flags]"},
		{[]string{"merge", "out"}, "merge: SHARD_DIR missing: usage: transferlab merge OUT SHARD_DIR... [flags]"},
	} {
		_, _, code, err := runCLI(t, tc.args...)
		if code != 1 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: exit %d, err %v; want 1 and %q", tc.args, code, err, tc.want)
		}
	}
}

// TestFlagDefaultsReadable: no flag's help carries a broken default text
// (a dangling "name:," or "name:>"); k8s --name says
// its default as k8s.DefaultName computes it.
func TestFlagDefaultsReadable(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, ":,") || strings.Contains(f.Usage, ":>") {
				t.Errorf("%s --%s: help %q holds a broken default text", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	out, _, _, err := runCLI(t, "k8s", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if want := "(default: transferlab- and the config's name field, or its file name without the extension when that is blank"; !strings.Contains(out, want) {
		t.Errorf("k8s --help does not say %q:\n%s", want, out)
	}
}
