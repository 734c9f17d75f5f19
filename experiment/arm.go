package experiment

import (
	"errors"
	"fmt"

	"github.com/transferlab/transferlab/integrate"
)

// ArmConfig is one arm: the baseline (no override) or a candidate.
type ArmConfig struct {
	// Name labels the arm ("baseline", or the candidate's name).
	Name string `yaml:"name"`
	// SimOverrides are per-op speedup factors for the simulated server
	// (op → factor > 1 makes the op faster), e.g. {rmsnorm: 2.5}.
	SimOverrides map[string]float64 `yaml:"sim_overrides,omitempty"`
	// Override swaps a kernel into a launched server through the hook.
	Override *integrate.Override `yaml:"override,omitempty"`
}

func (a ArmConfig) isCandidate() bool { return len(a.SimOverrides) > 0 || a.Override != nil }

func (a ArmConfig) validate(kind string) error {
	var errs []error
	for op, f := range a.SimOverrides {
		if !(f > 0) {
			errs = append(errs, fmt.Errorf("sim_overrides.%s: speedup factor must be > 0, got %g", op, f))
		}
	}
	switch {
	case len(a.SimOverrides) > 0 && kind != ServerSim:
		errs = append(errs, errors.New("sim_overrides: only the sim server takes them; use override for a launched server"))
	case a.Override != nil && kind == ServerSim:
		errs = append(errs, errors.New("override: the sim server takes sim_overrides, not a kernel override"))
	case a.Override != nil:
		if err := a.Override.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("override: %w", err))
		}
	}
	return errors.Join(errs...)
}
