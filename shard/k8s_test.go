package shard

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/k8s"
)

// endpointConfig is a config every shard can share a server of, its trace
// at t.csv.
const endpointConfig = "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: endpoint, endpoint: {url: \"http://10.0.0.1:8000\"}}\narms: [{name: baseline}]\n"

// kubeTrace is a trace file's bytes for the manifests below.
func kubeTrace(t *testing.T) []byte {
	t.Helper()
	trace, err := os.ReadFile(filepath.Join("..", "configs", "traces", "prefill-heavy-4000in-8out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return trace
}

// kubeManifest is KubeManifest of cfg for two shards.
func kubeManifest(t *testing.T, cfg string) string {
	t.Helper()
	out, err := KubeManifest(cfg, k8s.Spec{Shards: 2, Image: "img:1", OutClaim: "claim", StartAt: time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC), MergeWait: time.Hour})
	if err != nil {
		t.Fatalf("manifest of %s: %v", cfg, err)
	}
	return string(out)
}

// TestKubeManifestName: the objects' default name prefix comes from the
// config's name: field (as a DNS-1123 label), the file name only when name:
// is unset.
func TestKubeManifestName(t *testing.T) {
	trace := kubeTrace(t)
	for _, tc := range []struct{ name, want string }{
		{"name: My Study_v2\n", "name: transferlab-my-study-v2-"},
		{"", "name: transferlab-canary-prod-"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "t.csv"), trace, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "Canary.Prod.yaml")
		if err := os.WriteFile(cfg, []byte(tc.name+endpointConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := kubeManifest(t, cfg); !strings.Contains(out, tc.want) {
			t.Errorf("config %q: manifest names no object %q...:\n%s", tc.name, tc.want, out)
		}
	}
}

// TestKubeManifestTraceFromWorkingFolder: the manifest inlines the trace the
// run would read, found as run finds it: beside the config, else in the
// working folder.
func TestKubeManifestTraceFromWorkingFolder(t *testing.T) {
	trace := kubeTrace(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), trace, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "cfg"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cfg", "k.yaml")
	if err := os.WriteFile(cfg, []byte(endpointConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if out := kubeManifest(t, cfg); !strings.Contains(out, "trace: "+base64.StdEncoding.EncodeToString(trace)) {
		t.Errorf("manifest does not inline the trace:\n%.500s", out)
	}
}

// TestKubeManifestRefusesLaunchedServer: a config whose server each shard
// would launch is refused naming the config.
func TestKubeManifestRefusesLaunchedServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), kubeTrace(t), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sim.yaml")
	text := strings.Replace(endpointConfig, `server: {kind: endpoint, endpoint: {url: "http://10.0.0.1:8000"}}`, "server: {kind: sim}", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := KubeManifest(cfg, k8s.Spec{Shards: 2, Image: "img:1", OutClaim: "claim"}); err == nil || !strings.Contains(err.Error(), cfg) || !strings.Contains(err.Error(), "server.kind sim") {
		t.Errorf("sim server: %v, want refused naming %s and server.kind sim", err, cfg)
	}
}
