package experiment

import (
	"context"
	"errors"

	"github.com/transferlab/transferlab/amdahl"
)

type referenceSection struct{}
type overrideSection struct{}

func (r *runner) startReference(ctx context.Context, arm ArmConfig) (armServer, error) {
	return nil, errors.New("reference server: not wired yet")
}

func (r *referenceSection) servedModel() string { return "" }

func (r *runner) validatedSpeedup(arm ArmConfig) (amdahl.Estimate, error) {
	return amdahl.Estimate{}, errors.New("no validation report")
}
