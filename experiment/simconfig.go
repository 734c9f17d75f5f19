package experiment

import (
	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/sim"
)

// SimSection is the `server.sim` block: a sim.Config whose keys left out keep
// sim.DefaultConfig's values. Unknown keys are rejected.
type SimSection struct{ sim.Config }

// UnmarshalYAML decodes the block on top of sim.DefaultConfig. Unknown keys
// are reported by Parse (with their lines, all at once) and the sim's own
// checks by Config.Validate.
func (s *SimSection) UnmarshalYAML(n *yaml.Node) error {
	cfg := sim.DefaultConfig()
	if err := n.Decode(&cfg); err != nil {
		return err
	}
	s.Config = cfg
	return nil
}

// MarshalYAML writes the effective sim config.
func (s SimSection) MarshalYAML() (any, error) { return s.Config, nil }
