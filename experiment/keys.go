package experiment

import (
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/internal/yamlcheck"
	"github.com/transferlab/transferlab/sim"
)

// simSectionType is the `server.sim` block's type; its own UnmarshalYAML
// decodes it as the sim.Config it holds, so its keys are checked as that.
var simSectionType = reflect.TypeOf(SimSection{})

// checkConfig walks a decoded config document against Config with the
// shared checks of yamlcheck (unknown keys and values of the wrong type,
// each with its dotted field and line; bad values are nulled so they decode
// as zero values), the `server.sim` block read as the sim.Config it decodes
// into, exactly as `serve-sim --config` reads its file (sim.DecodeConfig).
func checkConfig(doc *yaml.Node) *yamlcheck.Result {
	return yamlcheck.Check(doc, reflect.TypeOf(Config{}), yamlcheck.As(simSectionType, reflect.TypeOf(sim.Config{})))
}
