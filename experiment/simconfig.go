package experiment

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/sim"
)

// SimSection is the `server.sim` block: a sim.Config whose keys left out keep
// sim.DefaultConfig's values. Unknown keys are rejected.
type SimSection struct{ sim.Config }

// UnmarshalYAML decodes the block on top of sim.DefaultConfig with unknown
// keys rejected (yaml's Node.Decode would not reject them).
func (s *SimSection) UnmarshalYAML(n *yaml.Node) error {
	raw, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	cfg, err := sim.DecodeConfig(bytes.NewReader(raw), fmt.Sprintf("server.sim (line %d)", n.Line))
	if err != nil {
		return err
	}
	s.Config = cfg
	return nil
}

// MarshalYAML writes the effective sim config.
func (s SimSection) MarshalYAML() (any, error) { return s.Config, nil }
