package main

import (
	"bytes"
	"encoding/base64"
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

// TestK8sJobName: the objects' default name prefix comes from the config's
// name: field (as a DNS-1123 label), the file name only when name: is unset.
func TestK8sJobName(t *testing.T) {
	trace, err := os.ReadFile(filepath.Join("..", "..", "configs", "traces", "prefill-heavy-4000in-8out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, want string }{
		{"name: My Study_v2\n", "name: transferlab-my-study-v2-"},
		{"", "name: transferlab-canary-prod-"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "t.csv"), trace, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "Canary.Prod.yaml")
		text := tc.name + "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: endpoint, endpoint: {url: \"http://10.0.0.1:8000\"}}\narms: [{name: baseline}]\n"
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := k8sManifest(t, cfg); !strings.Contains(out, tc.want) {
			t.Errorf("config %q: manifest names no object %q...:\n%s", tc.name, tc.want, out)
		}
	}
}

// TestK8sTraceFromWorkingFolder: the manifest inlines the trace the run
// would read, found as run finds it: beside the config, else in the working
// folder.
func TestK8sTraceFromWorkingFolder(t *testing.T) {
	trace, err := os.ReadFile(filepath.Join("..", "..", "configs", "traces", "prefill-heavy-4000in-8out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), trace, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "cfg"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cfg", "k.yaml")
	text := "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: endpoint, endpoint: {url: \"http://10.0.0.1:8000\"}}\narms: [{name: baseline}]\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if out := k8sManifest(t, cfg); !strings.Contains(out, "trace: "+base64.StdEncoding.EncodeToString(trace)) {
		t.Errorf("manifest does not inline the trace:\n%.500s", out)
	}
}

// k8sManifest is what `transferlab k8s CFG` prints for two shards.
func k8sManifest(t *testing.T, cfg string) string {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"k8s", cfg, "--shards", "2", "--image", "img:1", "--out-claim", "claim"})
	if err := root.Execute(); err != nil {
		t.Fatalf("k8s %s: %v\n%s", cfg, err, out.String())
	}
	return out.String()
}
