package integrate

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestCommittedH200Validation checks that the candidate arm of the committed GPU
// config passes CheckValidation against the committed H200 validation report:
// same target, same kernel file hash, same captured shape set, verdict pass. A
// kernel edited without re-validation fails here, in CI, before any GPU run.
func TestCommittedH200Validation(t *testing.T) {
	t.Parallel()
	root := ".."
	b, err := os.ReadFile(filepath.Join(root, "configs", "h200-llama.yaml"))
	if err != nil {
		t.Skipf("no committed GPU config: %v", err)
	}
	var cfg struct {
		Arms []struct {
			Name     string    `yaml:"name"`
			Override *Override `yaml:"override"`
		} `yaml:"arms"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range cfg.Arms {
		if a.Override == nil {
			continue
		}
		n++
		ov := *a.Override
		ov.BaseDir = filepath.Join(root, "configs") // paths in a config are relative to its folder
		rep, err := CheckValidation(ov)
		if err != nil {
			t.Errorf("arm %s: %v", a.Name, err)
			continue
		}
		if rep.Speedup.S == nil || *rep.Speedup.S <= 0 {
			t.Errorf("arm %s: report has no isolated speedup s", a.Name)
		}
	}
	if n == 0 {
		t.Error("configs/h200-llama.yaml has no override arm")
	}
}
