package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/internal/yamlcheck"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/traces"
)

// Config is one experiment as requested in YAML. Unknown keys are rejected.
// Defaults are filled by Effective; both forms go into the results manifest.
type Config struct {
	// Name labels the experiment in reports.
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Seed seeds every source of randomness (synthetic arrivals, sampling,
	// bootstrap); it is echoed in the report.
	Seed int64 `yaml:"seed"`
	// Out is the default output folder, relative to the working folder (the
	// CLI's --out overrides it; without either, runs/<config name>-<UTC time>).
	Out string `yaml:"out,omitempty"`

	Trace       TraceConfig   `yaml:"trace"`
	Load        LoadConfig    `yaml:"load"`
	Repetitions int           `yaml:"repetitions,omitempty"`
	Server      ServerConfig  `yaml:"server"`
	Request     RequestConfig `yaml:"request"`
	Arms        []ArmConfig   `yaml:"arms"`
	Amdahl      AmdahlConfig  `yaml:"amdahl"`
	SLO         SLOConfig     `yaml:"slo"`
	Energy      EnergyConfig  `yaml:"energy"`
	Extra       ExtraConfig   `yaml:",inline"`

	// baseDir is the config file's folder: relative paths inside the config
	// (trace, kernels, validation reports) are relative to it.
	baseDir string
	// file names the config in errors found after parsing (Parse's name);
	// lines holds its fields' lines (nil for a Config not parsed from a file).
	file  string
	lines *yamlcheck.Result
}

// TraceConfig names the trace file and the transforms applied before scaling.
type TraceConfig struct {
	// Path is the trace file: absolute, or relative to the config file's
	// folder (or, when nothing is there, to the working folder).
	Path string `yaml:"path"`
	// Format forces a reader ("" detects it from the header).
	Format string `yaml:"format,omitempty"`
	// Lenient skips bad rows (counted in the report) instead of failing.
	Lenient bool `yaml:"lenient,omitempty"`
	// First keeps only the first N rows (0 or absent keeps all; more rows
	// than the trace has is refused when the trace is read).
	First int `yaml:"first,omitempty"`
	// ClampContext limits prompt + output tokens to this many, as a server's
	// context length counts them (0: no clamp, else ≥ 2): a prompt is cut
	// to N − its output (at least 1), an output that alone does not fit to
	// N − 1 (traces.ClampContext); clamped rows are counted.
	ClampContext int `yaml:"clamp_context,omitempty"`
	// Mapping names the columns and time unit of a generic CSV/JSONL trace
	// (format csv or jsonl).
	Mapping *traces.Mapping `yaml:"mapping,omitempty"`
	// KeepFailed keeps BurstGPT's failed requests (zero response tokens) as
	// 1-token requests instead of dropping them (dropped rows are counted).
	KeepFailed bool `yaml:"keep_failed,omitempty"`
}

// Load modes: how an offered load turns into arrival times.
const (
	// LoadTrace time-scales the real trace to the target mean rate, keeping its burst shape.
	LoadTrace = "trace"
	// LoadPoisson, LoadGamma and LoadConstant draw synthetic arrivals at the target
	// rate, with token lengths drawn from the trace's empirical distribution.
	LoadPoisson  = "poisson"
	LoadGamma    = "gamma"
	LoadConstant = "constant"
)

// LoadConfig lists the offered loads and how long each cell runs.
type LoadConfig struct {
	// Mode is trace (default), poisson, gamma or constant.
	Mode string `yaml:"mode,omitempty"`
	// RatesRPS are the offered loads in requests per second, one cell each.
	RatesRPS []float64 `yaml:"rates_rps"`
	// CV is the Gamma arrivals' coefficient of variation (mode gamma only).
	CV float64 `yaml:"cv,omitempty"`
	// Duration is the span of arrivals replayed per cell after the warm-up.
	Duration time.Duration `yaml:"duration"`
	// Warmup is the span of arrivals at the start of each cell that are sent
	// but excluded from the measured window.
	Warmup time.Duration `yaml:"warmup,omitempty"`
	// MaxRequests caps the requests of one cell (0: no cap).
	MaxRequests int `yaml:"max_requests,omitempty"`
	// MaxInFlight caps in-flight requests (0: pure open loop); requests the cap
	// delays are counted in the report.
	MaxInFlight int `yaml:"max_in_flight,omitempty"`
	// WarmupReplay, when true, replays each offered load's schedule once,
	// unmeasured, before the first measured cell of that load on every
	// freshly started server (its requests are in no cell and not in
	// records.jsonl; the manifest lists each replay). A server that captures
	// CUDA graphs lazily, one per new batch shape, otherwise pays for the
	// captures inside the first measured cell after each start: on the H200
	// reference server that made TTFT p50 ~150-300 ms in first cells against
	// ~15-30 ms in cells replaying a schedule the server had already seen
	// (results/h200-2026-11-29/README.md). Default false.
	WarmupReplay bool `yaml:"warmup_replay,omitempty"`
}

// RequestConfig shapes each HTTP request.
type RequestConfig struct {
	// Model is sent as the OpenAI "model" field.
	Model string `yaml:"model,omitempty"`
	// Endpoint is "completions" (default) or "chat".
	Endpoint string `yaml:"endpoint,omitempty"`
	// Timeout bounds one request from send to its last event (default 120 s).
	Timeout time.Duration `yaml:"timeout,omitempty"`
	// Headers are sent with every request (and with the run's own probes of
	// an endpoint: /v1/models, /version), e.g. Authorization: "Bearer
	// ${OPENAI_API_KEY}". ${NAME} is replaced by the environment variable
	// NAME when the run starts; an unset one, or one set but empty (an
	// empty credential), is a config error naming it.
	// Values are secrets: every file, log and report shows them as REDACTED.
	Headers map[string]string `yaml:"headers,omitempty"`
	// TLS configures https:// endpoints (default: the system roots).
	TLS *TLSConfig `yaml:"tls,omitempty"`
}

// TLSConfig is the `request.tls` block for https:// endpoints.
type TLSConfig struct {
	// CAFile is a PEM file of CA certificates trusted in addition to the
	// system roots (a private deployment's CA).
	CAFile string `yaml:"ca_file,omitempty"`
	// InsecureSkipVerify turns certificate verification OFF: anyone on the
	// path can read and change the traffic, API key included. For a test
	// deployment with a self-signed certificate only; the run warns loudly
	// and the report says so.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify,omitempty"`
}

// AmdahlConfig names the op the candidate replaces and, optionally, how the
// run measures its addressable fraction on a launched server.
type AmdahlConfig struct {
	// TargetOp is the op whose time is the addressable fraction (e.g. "rmsnorm").
	TargetOp string `yaml:"target_op"`
	// Profile, when set (reference server only), measures f in the run: after
	// each measured baseline cell an unmeasured profiling replay of the same
	// schedule is profiled with the torch profiler for Profile.Window, and f is
	// taken from that Chrome trace instead of the hook's CUDA-event timings
	// (which miss CUDA-graph replays). See ProfileConfig (profileconfig.go).
	Profile *ProfileConfig `yaml:"profile,omitempty"`
}

// SLOConfig holds the service-level objectives (ms). Zero means not declared.
type SLOConfig struct {
	TTFTMs float64 `yaml:"ttft_ms,omitempty"`
	TPOTMs float64 `yaml:"tpot_ms,omitempty"`
	E2EMs  float64 `yaml:"e2e_ms,omitempty"`
	// Percentile at which the SLO and capacity-at-SLO are judged: 50, 90,
	// 95, 99 (the default) or 99.9, the percentiles a cell's distributions
	// hold (analysis.CheckPercentile).
	Percentile float64 `yaml:"percentile,omitempty"`
}

// EnergyConfig controls the energy sampler.
type EnergyConfig struct {
	// Disabled turns sampling off (the report then says "not measured").
	Disabled bool `yaml:"disabled,omitempty"`
	// Period is the sampling period (default 50 ms).
	Period time.Duration `yaml:"period,omitempty"`
	// Device is the NVML device index (default 0).
	Device int `yaml:"device,omitempty"`
	// Idle, when > 0, samples power for this long just before each cell of a
	// reference server (loaded, no request in flight) and reports the mean as
	// the cell's idle_power_w (W). Default 0: idle power not measured (listed
	// as missing, never 0). Each cell then takes Idle longer.
	Idle time.Duration `yaml:"idle,omitempty"`
}

// LoadOption changes how Load reads a config.
type LoadOption func(*loadSettings)

type loadSettings struct{ files bool }

// CheckFiles makes Load also check that every file the config names exists
// (Config.FileProblems), reporting each with its field and every place
// looked, together with the other problems. Default off: a config can be
// read from a folder its relative paths do not resolve from.
func CheckFiles() LoadOption { return func(s *loadSettings) { s.files = true } }

// Load reads and decodes a config file, rejecting unknown keys, and validates
// it. Relative paths inside it are relative to the file's folder (or, when
// nothing is there, to the working folder).
func Load(path string, opts ...LoadOption) (*Config, []byte, error) {
	var set loadSettings
	for _, o := range opts {
		o(&set)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	cfg, err := parse(bytes.NewReader(raw), path, filepath.Dir(path), set.files)
	if err != nil {
		return nil, raw, err
	}
	return cfg, raw, nil
}

// Parse decodes a config from r (name labels errors), rejecting unknown keys,
// and validates it. Relative paths inside it are relative to baseDir. It does
// not look for the files the config names (Load with CheckFiles does).
func Parse(r io.Reader, name, baseDir string) (*Config, error) {
	return parse(r, name, baseDir, false)
}

func parse(r io.Reader, name, baseDir string, files bool) (*Config, error) {
	root, err := yamlcheck.Parse(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("the file is empty")
		}
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	// Every problem at once, each as `field (line N): message`: keys given
	// twice (the repeat dropped, so the rest decodes), unknown
	// keys, values of the wrong type (named by field, line and the type
	// wanted; their nodes are nulled, so they decode as zero values), yaml's
	// own type errors for what the checks do not know, then the checks of
	// Validate on what did decode, less those that only repeat a refused
	// value.
	chk := checkConfig(root)
	problems := chk.Problems()
	var cfg Config
	if err := root.Decode(&cfg); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, fmt.Errorf("config %s: %w", name, errors.Join(append(problems, chk.Locate(err)...)...))
		}
		for _, e := range te.Errors {
			problems = append(problems, chk.Locate(errors.New(e))...)
		}
	}
	cfg.baseDir, cfg.file, cfg.lines = baseDir, name, chk
	for i := range cfg.Arms {
		if o := cfg.Arms[i].Override; o != nil {
			o.BaseDir = overrideBase(baseDir, o.Candidate)
		}
	}
	var refused []string
	if files {
		var missing []error
		for _, f := range cfg.FileProblems() {
			missing = append(missing, f)
			refused = append(refused, f.Field)
		}
		problems = append(problems, chk.Locate(errors.Join(missing...))...)
	}
	problems = append(problems, chk.Locate(cfg.Validate(), refused...)...)
	if len(problems) > 0 {
		return nil, fmt.Errorf("config %s: %w", name, errors.Join(dedupe(problems)...))
	}
	return &cfg, nil
}

// fieldError is err about the config's field at dotted path, as
// `field (line N): message` (internal/yamlcheck's format; the line when the
// field is in the file), for problems found after parsing (an environment
// variable a value names).
func (c *Config) fieldError(path string, err error) error {
	p := yamlcheck.Problem{Path: path, Msg: err.Error()}
	if c.lines != nil {
		p.Line, _ = c.lines.Line(path)
	}
	return p
}

// errorf wraps err as a problem of the config file ("config NAME: …").
func (c *Config) errorf(err error) error {
	if c.file == "" {
		return fmt.Errorf("config: %w", err)
	}
	return fmt.Errorf("config %s: %w", c.file, err)
}

// dedupe drops problems whose text repeats an earlier one (a custom
// unmarshaller and the shared checks can both refuse the same key).
func dedupe(errs []error) []error {
	seen := map[string]bool{}
	out := errs[:0:0]
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return out
}

// armNameRE is what an arm name may be: it becomes a folder name under the
// output folder's servers/ and part of file names, so no separator, no
// leading dot or dash, and ASCII only.
var armNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Validate reports every problem at once (errors.Join), each naming its
// field, block by block in the file's order: trace, load and repetitions,
// request, arms, server, SLO and energy, amdahl, extra blocks.
func (c *Config) Validate() error {
	var p problems
	c.validateTrace(&p)
	c.validateLoad(&p)
	c.validateRequest(&p)
	c.validateArms(&p)
	c.validateServer(&p)
	c.validateTargets(&p)
	c.validateAmdahl(&p)
	c.validateExtra(&p)
	return errors.Join(p...)
}

// problems collects a config's problems, each naming its field.
type problems []error

// bad adds "field: message".
func (p *problems) bad(field, format string, a ...any) {
	*p = append(*p, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
}

// add adds errs that are not nil, as they are (each already names its field).
func (p *problems) add(errs ...error) {
	for _, err := range errs {
		if err != nil {
			*p = append(*p, err)
		}
	}
}

func (c *Config) validateTrace(p *problems) {
	if c.Trace.Path == "" {
		p.bad("trace.path", "required")
	}
	if c.Trace.First < 0 {
		p.bad("trace.first", "must be ≥ 0, got %d", c.Trace.First)
	}
	if c.Trace.ClampContext < 0 || c.Trace.ClampContext == 1 {
		p.bad("trace.clamp_context", "must be 0 (no clamp) or ≥ 2 (the smallest servable context: 1 prompt + 1 generated token), got %d", c.Trace.ClampContext)
	}
}

// validateLoad checks the load block and the repetitions: the cells.
func (c *Config) validateLoad(p *problems) {
	switch c.Load.Mode {
	case "", LoadTrace, LoadPoisson, LoadConstant:
	case LoadGamma:
		if c.Load.CV <= 0 {
			p.bad("load.cv", "mode gamma needs cv > 0, got %g", c.Load.CV)
		}
	default:
		p.bad("load.mode", "unknown mode %q (want trace, poisson, gamma or constant)", c.Load.Mode)
	}
	if len(c.Load.RatesRPS) == 0 {
		p.bad("load.rates_rps", "at least one offered load is required")
	}
	rates := map[float64]bool{}
	for i, r := range c.Load.RatesRPS {
		if !(r > 0) || math.IsInf(r, 1) {
			p.bad(fmt.Sprintf("load.rates_rps[%d]", i), "must be a finite number > 0 req/s, got %g", r)
		}
		if rates[r] {
			p.bad(fmt.Sprintf("load.rates_rps[%d]", i), "duplicate offered load %g req/s (use repetitions to repeat a load)", r)
		}
		rates[r] = true
	}
	if c.Load.Duration <= 0 {
		p.bad("load.duration", "must be > 0, got %s", c.Load.Duration)
	}
	if c.Load.Warmup < 0 {
		p.bad("load.warmup", "must be ≥ 0, got %s", c.Load.Warmup)
	}
	if c.Load.MaxRequests < 0 {
		p.bad("load.max_requests", "must be ≥ 0, got %d", c.Load.MaxRequests)
	}
	if c.Load.MaxInFlight < 0 {
		p.bad("load.max_in_flight", "must be ≥ 0, got %d", c.Load.MaxInFlight)
	}
	if c.Repetitions < 0 {
		p.bad("repetitions", "must be ≥ 0, got %d", c.Repetitions)
	}
	if c.Repetitions == 0 && c.lines != nil {
		// Leaving the key out gives 1; an explicit 0 would silently mean it.
		if _, ok := c.lines.Line("repetitions"); ok {
			p.bad("repetitions", "set to 0: leave it out for the default, 1 (or set the number of blocks, ≥ 1)")
		}
	}
}

func (c *Config) validateRequest(p *problems) {
	switch c.Request.Endpoint {
	case "", "completions", "chat":
	default:
		p.bad("request.endpoint", "unknown endpoint %q (want completions or chat)", c.Request.Endpoint)
	}
	if c.Request.Timeout < 0 {
		p.bad("request.timeout", "must be ≥ 0, got %s", c.Request.Timeout)
	}
	p.add(c.Request.validateHeaders()...)
	if t := c.Request.TLS; t != nil && t.CAFile != "" && t.InsecureSkipVerify {
		p.bad("request.tls.insecure_skip_verify", "true contradicts ca_file (verification would be off, the CA unused)")
	}
}

// validateArms checks each arm (its name, its own block against the server
// and the Amdahl target) and the arms together: one baseline first, without
// an override or a role, names unique ignoring case, one ceiling at most.
func (c *Config) validateArms(p *problems) {
	if len(c.Arms) == 0 {
		p.bad("arms", "at least one arm (baseline) is required")
	}
	// Arm names fold case when compared: each names per-arm files and
	// folders (servers/<arm>/), which would collide on a case-insensitive
	// file system (macOS, Windows) for names differing only by case.
	seen := map[string]int{}
	for i, a := range c.Arms {
		f := fmt.Sprintf("arms[%d]", i)
		if a.Name == "" {
			p.bad(f+".name", "required")
		} else if !armNameRE.MatchString(a.Name) {
			p.bad(f+".name", "%q: an arm name names a folder under servers/ in the output folder, so it is 1 to 64 of A-Z a-z 0-9 . _ - starting with a letter or digit (no separators, no spaces)", a.Name)
		}
		if j, ok := seen[strings.ToLower(a.Name)]; ok && a.Name != "" {
			if c.Arms[j].Name == a.Name {
				p.bad(f+".name", "duplicate arm name %q", a.Name)
			} else {
				p.bad(f+".name", "%q differs from arms[%d].name %q only by case: their per-arm files (servers/<arm>/) would collide on a case-insensitive file system (macOS, Windows); rename one", a.Name, j, c.Arms[j].Name)
			}
		} else {
			seen[strings.ToLower(a.Name)] = i
		}
		if err := a.validate(c.Server, c.Amdahl.TargetOp); err != nil {
			p.add(fmt.Errorf("%s: %w", f, err))
		}
		if a.IsCeiling() && i > 0 && slices.ContainsFunc(c.Arms[:i], ArmConfig.IsCeiling) {
			p.bad(f+".role", "a second ceiling arm: one ceiling per experiment (it is the same ablation)")
		}
	}
	if len(c.Arms) > 0 && c.Arms[0].isCandidate() {
		p.bad("arms[0]", "the first arm is the baseline and must not carry an override")
	}
	if len(c.Arms) > 0 && c.Arms[0].Role != "" {
		p.bad("arms[0].role", "the first arm is the baseline; it takes no role")
	}
}

func (c *Config) validateServer(p *problems) {
	for _, b := range c.Server.extraBlocks() {
		p.bad("server."+b, "set, but server.kind is %q: remove the block or change the kind", c.Server.Kind)
	}
	if err := c.Server.validate(); err != nil {
		// The sim's own checks name its keys (model.layers); they sit under
		// server.sim in this file.
		prefix := "server"
		if c.Server.Kind == servers.Sim {
			prefix = "server.sim"
		}
		p.add(fmt.Errorf("%s: %w", prefix, err))
	}
}

// validateTargets checks the SLO targets and the energy sampling.
func (c *Config) validateTargets(p *problems) {
	for _, v := range []struct {
		f string
		x float64
	}{{"slo.ttft_ms", c.SLO.TTFTMs}, {"slo.tpot_ms", c.SLO.TPOTMs}, {"slo.e2e_ms", c.SLO.E2EMs}} {
		if v.x < 0 {
			p.bad(v.f, "must be ≥ 0 ms, got %g", v.x)
		}
	}
	if q := c.SLO.Percentile; q != 0 && analysis.CheckPercentile(q) != nil {
		p.bad("slo.percentile", "%v", analysis.CheckPercentile(q))
	}
	if c.Energy.Period < 0 {
		p.bad("energy.period", "must be ≥ 0, got %s", c.Energy.Period)
	}
	if c.Energy.Idle < 0 || c.Energy.Idle > time.Minute {
		p.bad("energy.idle", "must be in [0, 1m], got %s", c.Energy.Idle)
	}
}

func (c *Config) validateAmdahl(p *problems) {
	if c.Server.Kind == servers.Sim && c.Amdahl.TargetOp != "" {
		if err := checkSimOp(c.Amdahl.TargetOp); err != nil {
			p.add(fmt.Errorf("amdahl.target_op: %w", err))
		}
	}
	if c.Amdahl.Profile != nil && c.Server.Kind != servers.Reference {
		p.bad("amdahl.profile", "profiling passes need the reference server (server.kind: reference), which serves the profiler's endpoints; the simulator's profile is exact")
	}
	if c.Amdahl.Profile != nil {
		p.add(c.Amdahl.Profile.Validate()) // each names amdahl.profile.<key>
	}
}

// validateExtra checks the blocks outside the core schema (capacity_search
// against the load and the SLO it searches over, then the rest).
func (c *Config) validateExtra(p *problems) {
	if cs := c.Extra.CapacitySearch; cs != nil {
		declared := func(key string) bool {
			if c.lines == nil {
				return false
			}
			_, ok := c.lines.Line("capacity_search." + key)
			return ok
		}
		p.add(cs.validate(c.Load, c.SLO, c.Server.Kind, declared))
	}
	p.add(c.Extra.validate())
}

// Effective returns a copy with every default filled in, as the run uses it.
func (c Config) Effective() Config {
	if c.Name == "" {
		c.Name = "experiment"
	}
	if c.Load.Mode == "" {
		c.Load.Mode = LoadTrace
	}
	if c.Repetitions == 0 {
		c.Repetitions = 1
	}
	if c.Request.Endpoint == "" {
		c.Request.Endpoint = "completions"
	}
	if c.Request.Timeout == 0 {
		c.Request.Timeout = 120 * time.Second
	}
	if c.SLO.Percentile == 0 {
		c.SLO.Percentile = 99
	}
	if c.Energy.Period == 0 {
		c.Energy.Period = 50 * time.Millisecond
	}
	if c.Request.Model == "" {
		c.Request.Model = c.Server.defaultModel()
	}
	if c.Amdahl.Profile != nil {
		p := c.Amdahl.Profile.effective()
		c.Amdahl.Profile = &p
	}
	if c.Extra.CapacitySearch != nil {
		cs := c.Extra.CapacitySearch.effective(c.Load)
		c.Extra.CapacitySearch = &cs
	}
	return c
}

// TracePath is where the run reads the trace: trace.path resolved as path
// resolves it.
func (c *Config) TracePath() string { return c.path(c.Trace.Path) }

// path resolves a relative path from the config: against the config file's
// folder, or, when nothing exists there, against the working folder (the
// repository root in the README's commands).
func (c *Config) path(p string) string {
	return resolvePath(c.baseDir, p)
}

func resolvePath(baseDir, p string) string {
	if p == "" || filepath.IsAbs(p) || baseDir == "" {
		return p
	}
	q := filepath.Join(baseDir, p)
	if _, err := os.Stat(q); err != nil {
		if _, err2 := os.Stat(p); err2 == nil {
			return p
		}
	}
	return q
}

// FileProblem is a file named in the config that is not there.
type FileProblem struct {
	// Field is the dotted field ("trace.path", "arms[1].override.candidate").
	Field string
	// Path is the path as written; Looked lists every place it was looked
	// for, in order, as absolute paths.
	Path   string
	Looked []string
	// Why is "no such file", "is a folder, not a file" or the stat error.
	Why string
	// Hint says how to make the file, when the run can say ("" otherwise).
	Hint string
}

func (f FileProblem) Error() string {
	msg := fmt.Sprintf("%s %q: %s (looked in %s)", f.Field, f.Path, f.Why, strings.Join(f.Looked, " and "))
	if f.Hint != "" {
		msg += "; " + f.Hint
	}
	return msg
}

// FileProblems checks every file the config names, by the rules the run
// resolves them with: trace.path from the config's folder, then the working
// folder (Config.path); an override's candidate, validation_report and
// captured_shapes from the working folder, then the override's base folder
// (integrate.Override.Resolve). The validation report and captured set are
// checked only in the modes that read them (on, shadow). It returns one
// problem per missing file, nil when all are there.
func (c *Config) FileProblems() []FileProblem {
	var out []FileProblem
	if c.Trace.Path != "" {
		if _, f := checkFile("trace.path", c.Trace.Path, c.baseDir, "."); f != nil {
			out = append(out, *f)
		}
	}
	if t := c.Request.TLS; t != nil && t.CAFile != "" {
		if _, f := checkFile("request.tls.ca_file", t.CAFile, c.baseDir, "."); f != nil {
			out = append(out, *f)
		}
	}
	for i, a := range c.Arms {
		o := a.Override
		if o == nil {
			continue
		}
		field := fmt.Sprintf("arms[%d].override.", i)
		if file, _, ok := strings.Cut(o.Candidate, ":"); ok && file != "" {
			if _, f := checkFile(field+"candidate", file, ".", o.BaseDir); f != nil {
				out = append(out, *f)
			}
		}
		if m := o.EffectiveMode(); m != integrate.ModeOn && m != integrate.ModeShadow {
			continue
		}
		for _, p := range []struct{ key, path string }{{"validation_report", o.ValidationReport}, {"captured_shapes", o.CapturedShapes}} {
			if p.path == "" {
				continue
			}
			if _, f := checkFile(field+p.key, p.path, ".", o.BaseDir); f != nil {
				f.Hint = fmt.Sprintf("`transferlab validate CONFIG --arm %s --out DIR` writes it", a.Name)
				out = append(out, *f)
			}
		}
	}
	return out
}

// FindFile resolves path p, named by field in a config, by looking in each
// folder of dirs in order (an absolute p as is). It returns the first match
// when that is a file, else a FileProblem naming the field, the path as
// written and every place looked.
func FindFile(field, p string, dirs ...string) (string, error) {
	found, f := checkFile(field, p, dirs...)
	if f != nil {
		return "", *f
	}
	return found, nil
}

func checkFile(field, p string, dirs ...string) (string, *FileProblem) {
	where := []string{p}
	if !filepath.IsAbs(p) {
		where = where[:0]
		for _, d := range dirs {
			if d == "" {
				d = "."
			}
			q := filepath.Join(d, p)
			if abs, err := filepath.Abs(q); err == nil {
				q = abs
			}
			if !slices.Contains(where, q) {
				where = append(where, q)
			}
		}
	}
	for _, q := range where {
		st, err := os.Stat(q)
		switch {
		case err == nil && st.IsDir():
			return "", &FileProblem{Field: field, Path: p, Looked: where, Why: "is a folder, not a file"}
		case err == nil:
			return q, nil
		case !errors.Is(err, os.ErrNotExist):
			return "", &FileProblem{Field: field, Path: p, Looked: where, Why: err.Error()}
		}
	}
	return "", &FileProblem{Field: field, Path: p, Looked: where, Why: "no such file"}
}

// overrideBase picks the folder an override's relative paths are resolved
// against, by the rule of Config.path applied to its candidate file.
func overrideBase(baseDir, candidate string) string {
	file, _, _ := strings.Cut(candidate, ":")
	if file == "" || filepath.IsAbs(file) {
		return baseDir
	}
	if _, err := os.Stat(filepath.Join(baseDir, file)); err != nil {
		if _, err2 := os.Stat(file); err2 == nil {
			return "."
		}
	}
	return baseDir
}
