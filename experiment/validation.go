package experiment

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/internal/outpath"
	"github.com/transferlab/transferlab/internal/yamlcheck"
	"github.com/transferlab/transferlab/traces"
)

// ValidationSetup is what the validation gate (`transferlab validate`,
// integrate.Validate) takes from an experiment config for one arm.
type ValidationSetup struct {
	// Reference is the config's reference server.
	Reference integrate.ReferenceConfig
	// Override is the arm's override, BaseDir set to the config's folder
	// when the config left it empty.
	Override integrate.Override
	// Schedule is the config's trace, clamped as the config says: the
	// capture and shadow replays send its first requests.
	Schedule traces.Schedule
	// Seed is the config's seed; Device its energy.device (the GPU).
	Seed   int64
	Device int
}

// validationConfig is the part of an experiment config (Config) that
// LoadValidation reads; other keys are left to Load, which `run` uses.
type validationConfig struct {
	Seed  int64 `yaml:"seed"`
	Trace struct {
		Path         string `yaml:"path"`
		Format       string `yaml:"format"`
		Lenient      bool   `yaml:"lenient"`
		ClampContext int    `yaml:"clamp_context"`
	} `yaml:"trace"`
	Server struct {
		Kind      string                     `yaml:"kind"`
		Reference *integrate.ReferenceConfig `yaml:"reference"`
	} `yaml:"server"`
	Arms []struct {
		Name     string              `yaml:"name"`
		Role     string              `yaml:"role"`
		Override *integrate.Override `yaml:"override"`
	} `yaml:"arms"`
	Energy struct {
		Device int `yaml:"device"`
	} `yaml:"energy"`

	// lines finds a field's line in the file, for errors.
	lines *yamlcheck.Result
}

// located is err with each problem as `field (line N): message`, N the
// line of the field in the config file.
func (c *validationConfig) located(err error) error {
	if c.lines == nil {
		return err
	}
	return errors.Join(c.lines.Locate(err)...)
}

// LoadValidation reads config path for the validation of arm's override
// with requests trace requests. The config first passes the checks run
// applies (Load: unknown keys, value types, ranges, each as `field (line N):
// message`), so validate never reads a value run would refuse. It refuses a
// server other than the reference server, an arm without an override or a
// ceiling arm, a candidate file that is not there (looked for as the hook
// does: the working folder, then the config's), and a trace shorter than
// requests.
func LoadValidation(path, arm string, requests int) (*ValidationSetup, error) {
	cfg, err := loadValidationConfig(path)
	if err != nil {
		return nil, err
	}
	if cfg.Server.Kind != "reference" || cfg.Server.Reference == nil {
		return nil, fmt.Errorf("validate: %s: server.kind must be reference (the gate runs in the server's Python)", path)
	}
	var ov *integrate.Override
	for i, a := range cfg.Arms {
		if a.Name != arm {
			continue
		}
		if a.Role == RoleCeiling {
			return nil, fmt.Errorf("validate: %s: arm %q is a ceiling (a timing-only ablation: the op's work removed, outputs meaningless): it is never validated", path, arm)
		}
		if ov = a.Override; ov == nil {
			break
		}
		if ov.BaseDir == "" {
			if abs, err := filepath.Abs(path); err == nil {
				ov.BaseDir = filepath.Dir(abs) // relative paths: from the working folder if they exist, else the config's folder
			}
		}
		if file, _, ok := strings.Cut(ov.Candidate, ":"); ok && file != "" {
			// As the hook resolves it (integrate.Override.Resolve): the working folder, then the config's.
			if _, err := FindFile(fmt.Sprintf("arms[%d].override.candidate", i), file, ".", ov.BaseDir); err != nil {
				return nil, fmt.Errorf("validate: config %s: %w", path, cfg.located(err))
			}
		}
	}
	if ov == nil {
		return nil, fmt.Errorf("validate: %s: arm %q not found or has no override", path, arm)
	}
	if err := ov.Validate(); err != nil {
		return nil, fmt.Errorf("validate: %s: arm %s: %w", path, arm, err)
	}
	sched, err := cfg.schedule(path, requests)
	if err != nil {
		return nil, err
	}
	return &ValidationSetup{Reference: *cfg.Server.Reference, Override: *ov, Schedule: sched, Seed: cfg.Seed, Device: cfg.Energy.Device}, nil
}

func loadValidationConfig(path string) (*validationConfig, error) {
	_, b, err := Load(path)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	var (
		c   validationConfig
		doc yaml.Node
	)
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("validate: %s: %w", path, err)
	}
	if err := doc.Decode(&c); err != nil {
		return nil, fmt.Errorf("validate: %s: %w", path, err)
	}
	c.lines = yamlcheck.Index(&doc)
	return &c, nil
}

// schedule reads the config's trace (clamped as the config says) for the
// capture replay, which needs n requests.
func (c *validationConfig) schedule(cfgPath string, n int) (traces.Schedule, error) {
	// The rule of run (Config): the config's folder, then the working folder.
	p, err := FindFile("trace.path", c.Trace.Path, filepath.Dir(cfgPath), ".")
	if err != nil {
		return traces.Schedule{}, fmt.Errorf("validate: config %s: %w", cfgPath, c.located(err))
	}
	s, err := traces.ReadFile(p, traces.ReadOptions{Format: c.Trace.Format, Lenient: c.Trace.Lenient})
	if err != nil {
		return traces.Schedule{}, err
	}
	if c.Trace.ClampContext > 0 {
		s = traces.ClampContext(s, c.Trace.ClampContext)
	}
	if len(s.Requests) < n {
		return traces.Schedule{}, fmt.Errorf("validate: trace %s has %d requests, --requests asks for %d", p, len(s.Requests), n)
	}
	return s, nil
}

// PrepareValidation readies v, whose flags (Arm, Requests, Out, Captured, …)
// are set, for integrate.Validate.Run on config path: the config's reference
// server, the arm's override, the trace, seed and GPU (LoadValidation); a
// --captured file that is there; the GPU software check run makes
// (integrate.Preflight), before anything is written; then v.Out made and
// made absolute.
func PrepareValidation(ctx context.Context, path string, v *integrate.Validate) error {
	setup, err := LoadValidation(path, v.Arm, v.Requests)
	if err != nil {
		return err
	}
	if v.Captured != "" {
		if _, err := FindFile("--captured", v.Captured, "."); err != nil {
			return fmt.Errorf("validate: %w", err)
		}
	}
	if _, err := integrate.Preflight(ctx, setup.Reference); err != nil {
		return fmt.Errorf("validate: config %s: server.kind reference needs a GPU machine with torch + transformers: %w", path, err)
	}
	if err := outpath.MkdirAll("--out", v.Out); err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	out, err := filepath.Abs(v.Out)
	if err != nil {
		return err
	}
	v.Out = out
	v.Reference, v.Override, v.Schedule, v.Seed, v.Device = setup.Reference, setup.Override, setup.Schedule, setup.Seed, setup.Device
	return nil
}
