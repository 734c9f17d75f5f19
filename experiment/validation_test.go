package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestLoadValidationReadsTheGPUConfig: the shipped H200 config yields the
// reference server, the Triton arm's override (kernel prefix tl_, base folder
// set) and a trace long enough for the default 48 capture requests.
func TestLoadValidationReadsTheGPUConfig(t *testing.T) {
	t.Chdir("..") // the config's paths are from the repository root, as validate is run
	v, err := LoadValidation(filepath.Join("configs", "h200-llama.yaml"), "triton-rmsnorm", 48)
	if err != nil {
		t.Fatal(err)
	}
	if v.Reference.Python == "" && v.Reference.Effective().Python == "" {
		t.Errorf("reference = %+v", v.Reference)
	}
	if v.Override.KernelPrefix != "tl_" || v.Override.BaseDir == "" || len(v.Schedule.Requests) < 48 {
		t.Errorf("override %+v, %d requests", v.Override, len(v.Schedule.Requests))
	}
}

// TestValidateConfigStrict: validate refuses a config that run refuses, by
// field and line, instead of reading a truncated value (clamp_context: 1.5
// became 1 through yaml.v3 alone).
func TestValidateConfigStrict(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "configs", "h200-llama.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	doc["trace"].(map[string]any)["clamp_context"] = 1.5
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadValidation(path, "triton-rmsnorm", 1)
	if err == nil || !strings.Contains(err.Error(), "trace.clamp_context (line ") || !strings.Contains(err.Error(), "1.5 is not a whole number") {
		t.Fatalf("err = %v, want trace.clamp_context refused by field and line", err)
	}
}
