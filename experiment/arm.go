package experiment

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/sim"
)

// Arm roles (ArmConfig.Role). The first arm is always the baseline.
const (
	// RoleCandidate is a kernel under test: validated, compared with the
	// baseline and given a verdict. The default for every arm after the first.
	RoleCandidate = "candidate"
	// RoleCeiling is a timing-only ablation: the target op's work removed
	// (a correctly shaped output with the least possible work), so its cells
	// measure the most any kernel for the op could give at each load. Its
	// outputs are meaningless: it is never validated and never given a
	// verdict; the Amdahl section takes f by ablation and s in situ from it.
	RoleCeiling = "ceiling"
)

// ArmConfig is one arm: the baseline (no override), a candidate, or a ceiling.
type ArmConfig struct {
	// Name labels the arm ("baseline", or the candidate's name).
	Name string `yaml:"name"`
	// Role is candidate (default after the first arm) or ceiling (RoleCeiling).
	Role string `yaml:"role,omitempty"`
	// SimOverrides are per-op speedup factors for the simulated server
	// (op → factor > 1 makes the op faster), e.g. {rmsnorm: 2.5}, or the
	// word ceiling: the op at zero cost (a ceiling arm), e.g. {rmsnorm: ceiling}.
	SimOverrides map[string]SimFactor `yaml:"sim_overrides,omitempty"`
	// Override swaps a kernel into a launched server through the hook. A
	// ceiling arm's candidate file declares itself one (CeilingDeclaration).
	Override *integrate.Override `yaml:"override,omitempty"`
	// Endpoint is this arm's own running server (server.kind endpoint):
	// a canary comparison is two arms with two URLs.
	Endpoint *ArmEndpoint `yaml:"endpoint,omitempty"`
}

// ArmEndpoint is the `arms[].endpoint` block.
type ArmEndpoint struct {
	// URL is the arm's OpenAI-compatible base URL (http:// or https://,
	// without /v1), e.g. https://canary.example.com.
	URL string `yaml:"url"`
}

// SimFactor is one sim_overrides value: a speedup factor > 0, or a ceiling
// (written "ceiling": the op costs nothing).
type SimFactor struct {
	// Factor is the speedup factor (0 for a ceiling).
	Factor float64
	// Ceiling is true for the word ceiling.
	Ceiling bool
}

// Factor returns the SimFactor of a speedup factor f.
func Factor(f float64) SimFactor { return SimFactor{Factor: f} }

// Ceiling is the SimFactor of an op at zero cost.
var Ceiling = SimFactor{Ceiling: true}

// IsCeiling reports whether f removes the op (written "ceiling").
func (f SimFactor) IsCeiling() bool { return f.Ceiling }

// CheckYAML says why n is neither a number nor the word ceiling ("" when it
// is one); the config check (yamlcheck.Checker) reports it at its field.
func (SimFactor) CheckYAML(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Value == RoleCeiling {
		return ""
	}
	var v float64
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&v) != nil {
		return fmt.Sprintf("%q is not a speedup factor (a number > 0) or the word ceiling", n.Value)
	}
	return ""
}

// UnmarshalYAML reads a number or the word ceiling.
func (f *SimFactor) UnmarshalYAML(n *yaml.Node) error {
	if msg := f.CheckYAML(n); msg != "" {
		return fmt.Errorf("line %d: %s", n.Line, msg)
	}
	if n.Value == RoleCeiling {
		*f = Ceiling
		return nil
	}
	var v float64
	if err := n.Decode(&v); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*f = Factor(v)
	return nil
}

// MarshalYAML writes "ceiling" or the number.
func (f SimFactor) MarshalYAML() (any, error) {
	if f.Ceiling {
		return RoleCeiling, nil
	}
	return f.Factor, nil
}

// MarshalJSON writes "ceiling" or the number (the manifest echoes configs).
func (f SimFactor) MarshalJSON() ([]byte, error) {
	if f.Ceiling {
		return json.Marshal(RoleCeiling)
	}
	return json.Marshal(f.Factor)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *SimFactor) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil && s == RoleCeiling {
		*f = Ceiling
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Factor(v)
	return nil
}

func (a ArmConfig) isCandidate() bool { return len(a.SimOverrides) > 0 || a.Override != nil }

// IsCeiling reports whether the arm is a ceiling (RoleCeiling).
func (a ArmConfig) IsCeiling() bool { return a.Role == RoleCeiling }

// checkSimOp is nil when op names one of the simulator's ops, else an error
// that lists them: a misspelled op is refused at load, so that it stops
// nothing mid-run after the baseline is measured.
func checkSimOp(op string) error {
	if _, known := sim.OpByName(op); known {
		return nil
	}
	return fmt.Errorf("unknown op %q (known: %s)", op, strings.Join(sim.OpNames(), ", "))
}

// validate checks one arm of a config whose server block is srv; target is
// amdahl.target_op.
func (a ArmConfig) validate(srv ServerConfig, target string) error {
	kind := srv.Kind
	var errs []error
	switch {
	case a.Endpoint != nil && kind != servers.Endpoint:
		errs = append(errs, fmt.Errorf("endpoint: only server.kind endpoint takes a per-arm URL (kind is %q)", kind))
	case a.Endpoint != nil:
		if err := servers.CheckURL(a.Endpoint.URL); err != nil {
			errs = append(errs, fmt.Errorf("endpoint.url: %w", err))
		}
	case kind == servers.Endpoint && (srv.Endpoint == nil || srv.Endpoint.URL == ""):
		errs = append(errs, errors.New("endpoint.url: required when server.endpoint.url is not set (each arm needs a server to measure)"))
	}
	ops := make([]string, 0, len(a.SimOverrides))
	for op := range a.SimOverrides {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		f := a.SimOverrides[op]
		switch unknown := checkSimOp(op); {
		case unknown != nil:
			errs = append(errs, fmt.Errorf("sim_overrides.%s: %w", op, unknown))
		case f.IsCeiling() && !a.IsCeiling():
			errs = append(errs, fmt.Errorf("sim_overrides.%s: ceiling removes the op's work: only an arm with role: ceiling may (it is then never given a verdict)", op))
		case f.IsCeiling() && op != target:
			errs = append(errs, fmt.Errorf("sim_overrides.%s: a ceiling arm removes the target op (amdahl.target_op %q), not %s", op, target, op))
		case !f.IsCeiling() && !(f.Factor > 0 && !math.IsInf(f.Factor, 0)):
			errs = append(errs, fmt.Errorf("sim_overrides.%s: speedup factor must be a finite number > 0, got %g", op, f.Factor))
		case !f.IsCeiling() && a.IsCeiling():
			errs = append(errs, fmt.Errorf("sim_overrides.%s: a ceiling arm removes the target op and changes nothing else (write {%s: ceiling} alone)", op, target))
		}
	}
	switch a.Role {
	case "", RoleCandidate:
	case RoleCeiling:
		if target == "" {
			errs = append(errs, errors.New("role: a ceiling arm needs amdahl.target_op (the op whose work it removes)"))
		}
		switch {
		case kind == servers.Sim && !a.SimOverrides[target].IsCeiling() && target != "":
			errs = append(errs, fmt.Errorf("role: a ceiling arm on the simulator needs sim_overrides: {%s: ceiling}", target))
		case kind != servers.Sim && a.Override == nil:
			errs = append(errs, errors.New("role: a ceiling arm on a launched server needs an override whose candidate removes the target's work (e.g. configs/kernels/rmsnorm_ceiling.py)"))
		case a.Override != nil && a.Override.EffectiveMode() != integrate.ModeOn:
			errs = append(errs, fmt.Errorf("override.mode: a ceiling arm runs its candidate (mode on), got %q", a.Override.Mode))
		case a.Override != nil && a.Override.ValidationReport != "":
			errs = append(errs, errors.New("override.validation_report: a ceiling's outputs are meaningless and it is never validated: remove the key"))
		}
	default:
		errs = append(errs, fmt.Errorf("role: unknown role %q (want candidate or ceiling)", a.Role))
	}
	switch {
	case len(a.SimOverrides) > 0 && kind != servers.Sim:
		errs = append(errs, errors.New("sim_overrides: only the sim server takes them; use override for a launched server"))
	case a.Override != nil && kind == servers.Sim:
		errs = append(errs, errors.New("override: the sim server takes sim_overrides, not a kernel override"))
	case a.Override != nil && kind == servers.Endpoint:
		errs = append(errs, errors.New("override: an endpoint is a server transferlab did not launch, so no hook can be put into it; "+
			"measure the candidate's own deployment as another arm (arms[].endpoint.url), or let transferlab launch the server (server.kind command) to swap a kernel in"))
	case a.Override != nil:
		if err := a.Override.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("override: %w", err))
		}
	}
	return errors.Join(errs...)
}

// CeilingDeclaration is the line a ceiling's kernel file must hold, at top
// level, to be run by an arm with role: ceiling; a file that holds it is
// refused in any other arm. It keeps a kernel that computes nothing from
// ever being measured as a candidate, and a real kernel from being taken
// for a ceiling.
const CeilingDeclaration = `TRANSFERLAB_ROLE = "ceiling"`

var roleLine = regexp.MustCompile(`^TRANSFERLAB_ROLE\s*=\s*(["'])(\w+)["']\s*(#.*)?$`)

// declaredRole returns the role a kernel file declares (TRANSFERLAB_ROLE,
// "" when none) and the line it is on.
func declaredRole(path string) (role string, line int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if m := roleLine.FindStringSubmatch(sc.Text()); m != nil {
			return m[2], n, nil
		}
	}
	return "", 0, sc.Err()
}

// checkArmRoles checks, before any server starts, that every override arm's
// kernel file declares the arm's role: a ceiling arm's file holds
// CeilingDeclaration, a candidate's does not. An override without a
// candidate (mode off or capture on a candidate arm) has no file to check.
func checkArmRoles(arms []ArmConfig) error {
	var errs []error
	for i, a := range arms {
		if a.Override == nil || (a.Override.Candidate == "" && !a.IsCeiling()) {
			continue
		}
		file, _, err := a.Override.CandidateFile()
		if err != nil {
			errs = append(errs, fmt.Errorf("arms[%d].override.candidate: %w", i, err))
			continue
		}
		role, line, err := declaredRole(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("arms[%d].override.candidate: %w", i, err))
			continue
		}
		switch {
		case a.IsCeiling() && role != RoleCeiling:
			errs = append(errs, fmt.Errorf("arms[%d] (%s): role ceiling, but %s does not declare itself a ceiling (a top-level line %s): only a kernel written to remove the target's work may run as a ceiling", i, a.Name, file, CeilingDeclaration))
		case !a.IsCeiling() && role == RoleCeiling:
			errs = append(errs, fmt.Errorf("arms[%d] (%s): %s (line %d) declares itself a ceiling (its outputs are meaningless): set role: ceiling on this arm, or name a real kernel", i, a.Name, file, line))
		}
	}
	return errors.Join(errs...)
}

// ceilingArm returns the config's ceiling arm and true, if it has one.
func ceilingArm(arms []ArmConfig) (ArmConfig, bool) {
	i := slices.IndexFunc(arms, ArmConfig.IsCeiling)
	if i < 0 {
		return ArmConfig{}, false
	}
	return arms[i], true
}
