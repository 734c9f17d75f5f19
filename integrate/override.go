package integrate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/transferlab/transferlab/internal/outpath"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Sentinels a caller branches on.
var (
	// ErrTargetNotFound: the hook could not find an override's target, so the
	// server refused to start (it never silently serves the baseline).
	ErrTargetNotFound = errors.New("override target not found")
	// ErrValidationMissing: the override names no validation report, or the file is absent.
	ErrValidationMissing = errors.New("validation report missing")
	// ErrValidationFailing: the report's verdict is fail.
	ErrValidationFailing = errors.New("validation report failing")
	// ErrValidationStale: the report was made for another target, kernel file or captured shape set.
	ErrValidationStale = errors.New("validation report stale")
)

// Hook modes (DESIGN.md, "Kernel-override hook").
const (
	// ModeOff patches nothing (unless hook timings are asked for: then the original is timed).
	ModeOff = "off"
	// ModeCapture serves the original and records every distinct input signature with counts.
	ModeCapture = "capture"
	// ModeShadow serves the original and runs the candidate beside it on the first ShadowCalls eager calls.
	ModeShadow = "shadow"
	// ModeOn serves the candidate.
	ModeOn = "on"
)

// DefaultShadowCalls is Override.ShadowCalls's default.
const DefaultShadowCalls = 32

// EnvOverrideManifest names the override manifest the hook reads.
const EnvOverrideManifest = "TRANSFERLAB_OVERRIDE_MANIFEST"

// EnvHookTimings and EnvHookWindowS drive the hook's CUDA-event timings file
// (amdahl/HOOK_TIMINGS.md).
const (
	EnvHookTimings = "TRANSFERLAB_HOOK_TIMINGS"
	EnvHookWindowS = "TRANSFERLAB_HOOK_WINDOW_S"
)

// hookExitCode and hookStartupMarker are what the shim's sitecustomize prints and
// exits with when a target cannot be found (integrate/python/shim/sitecustomize.py).
const (
	hookExitCode      = 3
	hookStartupMarker = "transferlab hook: start-up failed"
)

var (
	methodTarget = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)
	opTarget     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
	candidateRef = regexp.MustCompile(`^(.+\.py):([A-Za-z_][A-Za-z0-9_]*)$`)
)

// Override swaps one target for a candidate inside the server through the hook.
type Override struct {
	// Name labels the override (default: the candidate's function name).
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Target is `module:Class.method` (e.g. a layer's forward) or `ns::op[.overload]`
	// (an aten op or a server's own custom op, through torch.library).
	Target string `yaml:"target" json:"target"`
	// Candidate is `file.py:function`; a relative file is resolved against BaseDir.
	Candidate string `yaml:"candidate" json:"candidate"`
	// Mode is off, capture, shadow or on (default on).
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// ShadowCalls is how many eager calls shadow mode compares (default DefaultShadowCalls).
	ShadowCalls int `yaml:"shadow_calls,omitempty" json:"shadow_calls,omitempty"`
	// KernelPrefix is the prefix of the candidate's kernel names, so a profile shows whose kernels ran.
	KernelPrefix string `yaml:"kernel_prefix,omitempty" json:"kernel_prefix,omitempty"`
	// Module, for op targets, is the Python module whose import registers the op (default torch).
	Module string `yaml:"module,omitempty" json:"module,omitempty"`
	// ValidationReport is the gate's report (transferlab validate); required for mode on.
	ValidationReport string `yaml:"validation_report,omitempty" json:"validation_report,omitempty"`
	// CapturedShapes is the captured shape set the report must have been made for
	// (optional: when set, a report made for another set is stale).
	CapturedShapes string `yaml:"captured_shapes,omitempty" json:"captured_shapes,omitempty"`
	// BaseDir resolves relative paths (set by the config loader to the config's folder).
	BaseDir string `yaml:"-" json:"-"`
}

// EffectiveMode is Mode with its default filled in.
func (o Override) EffectiveMode() string {
	if o.Mode == "" {
		return ModeOn
	}
	return o.Mode
}

// EffectiveName is Name, or the candidate's function name.
func (o Override) EffectiveName() string {
	if o.Name != "" {
		return o.Name
	}
	if m := candidateRef.FindStringSubmatch(o.Candidate); m != nil {
		return m[2]
	}
	return "override"
}

// Resolve finds a path named in the override the way experiment configs do: an
// absolute path as is; a relative one from the working folder (the repository
// root) when it exists there, else relative to BaseDir (the config's folder).
func (o Override) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) || o.BaseDir == "" {
		return p
	}
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return filepath.Join(o.BaseDir, p)
}

// CandidateFile returns the candidate's file (resolved) and function name.
func (o Override) CandidateFile() (file, function string, err error) {
	m := candidateRef.FindStringSubmatch(o.Candidate)
	if m == nil {
		return "", "", fmt.Errorf("override.candidate: %q is not file.py:function", o.Candidate)
	}
	return o.Resolve(m[1]), m[2], nil
}

// IsOpTarget reports whether Target is an op (`ns::op`) rather than a method.
func (o Override) IsOpTarget() bool { return strings.Contains(o.Target, "::") }

// Validate reports every problem at once, each naming its field.
func (o Override) Validate() error {
	var errs []error
	switch {
	case o.Target == "":
		errs = append(errs, errors.New("override.target: required"))
	case !methodTarget.MatchString(o.Target) && !opTarget.MatchString(o.Target):
		errs = append(errs, fmt.Errorf("override.target: %q is neither module:Class.method nor ns::op", o.Target))
	}
	mode := o.EffectiveMode()
	switch mode {
	case ModeOff, ModeCapture, ModeShadow, ModeOn:
	default:
		errs = append(errs, fmt.Errorf("override.mode: %q is not one of off, capture, shadow, on", o.Mode))
	}
	if mode == ModeOn || mode == ModeShadow || o.Candidate != "" {
		if file, _, err := o.CandidateFile(); err != nil {
			errs = append(errs, err)
		} else if st, err := os.Stat(file); err != nil || st.IsDir() {
			errs = append(errs, fmt.Errorf("override.candidate: file %s: not a readable file", file))
		}
	}
	if o.ShadowCalls < 0 {
		errs = append(errs, fmt.Errorf("override.shadow_calls: must be >= 0, got %d", o.ShadowCalls))
	}
	if o.Module != "" && !o.IsOpTarget() {
		errs = append(errs, errors.New("override.module: only op targets (ns::op) take a module"))
	}
	return errors.Join(errs...)
}

// hookManifest is the JSON the Python hook reads (tlhook.load_manifest).
type hookManifest struct {
	Version   int               `json:"version"`
	StatsDir  string            `json:"stats_dir"`
	Overrides []hookManifestOne `json:"overrides"`
}

type hookManifestOne struct {
	Name            string `json:"name"`
	Target          string `json:"target"`
	Candidate       string `json:"candidate,omitempty"`
	CandidateSHA256 string `json:"candidate_sha256,omitempty"`
	Mode            string `json:"mode"`
	ShadowCalls     int    `json:"shadow_calls"`
	KernelPrefix    string `json:"kernel_prefix,omitempty"`
	Module          string `json:"module,omitempty"`
	RecordShapes    bool   `json:"record_shapes,omitempty"`
}

// WriteHookManifest writes the override manifest the hook reads to path, with
// the candidate's absolute path and sha256 (the hook refuses a changed file),
// and hook receipts/stats going to statsDir.
func WriteHookManifest(path, statsDir string, ovs ...Override) error {
	m := hookManifest{Version: 1, StatsDir: statsDir}
	for i, o := range ovs {
		if err := o.Validate(); err != nil {
			return fmt.Errorf("integrate: override %d: %w", i, err)
		}
		one := hookManifestOne{Name: o.EffectiveName(), Target: o.Target, Mode: o.EffectiveMode(),
			ShadowCalls: o.ShadowCalls, KernelPrefix: o.KernelPrefix, Module: o.Module}
		if one.ShadowCalls == 0 {
			one.ShadowCalls = DefaultShadowCalls
		}
		if o.Candidate != "" {
			file, fn, err := o.CandidateFile()
			if err != nil {
				return fmt.Errorf("integrate: override %d: %w", i, err)
			}
			abs, err := filepath.Abs(file)
			if err != nil {
				return fmt.Errorf("integrate: override %d: %w", i, err)
			}
			sum, err := FileSHA256(abs)
			if err != nil {
				return fmt.Errorf("integrate: override %d: candidate: %w", i, err)
			}
			one.Candidate, one.CandidateSHA256 = abs+":"+fn, sum
		}
		m.Overrides = append(m.Overrides, one)
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := outpath.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("integrate: override manifest: %w", err)
	}
	return nil
}

// FileSHA256 is the hex sha256 of a file's bytes (what the hook and the gate record).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CheckValidation refuses an override whose validation report is missing
// (ErrValidationMissing), made for another target, kernel file or captured shape
// set (ErrValidationStale), or failing (ErrValidationFailing). Each error says
// which and how to fix it. It returns the report when it passes. Mode off and
// capture swap nothing and need no report (nil, nil).
func CheckValidation(o Override) (*ValidationReport, error) {
	mode := o.EffectiveMode()
	if mode == ModeOff || mode == ModeCapture {
		return nil, nil
	}
	name := o.EffectiveName()
	fix := fmt.Sprintf("run `transferlab validate` for override %s and set its validation_report", name)
	if o.ValidationReport == "" {
		return nil, fmt.Errorf("override %s: %w: validation_report is not set; %s", name, ErrValidationMissing, fix)
	}
	path := o.Resolve(o.ValidationReport)
	rep, err := ReadValidationReport(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("override %s: %w: %s does not exist; %s", name, ErrValidationMissing, path, fix)
	}
	if err != nil {
		return nil, fmt.Errorf("override %s: %w", name, err)
	}
	if rep.Target != o.Target {
		return nil, fmt.Errorf("override %s: %w: %s was made for target %q, the override targets %q; %s",
			name, ErrValidationStale, path, rep.Target, o.Target, fix)
	}
	file, fn, err := o.CandidateFile()
	if err != nil {
		return nil, fmt.Errorf("override %s: %w", name, err)
	}
	if m := candidateRef.FindStringSubmatch(rep.Candidate); m == nil || m[2] != fn {
		return nil, fmt.Errorf("override %s: %w: %s was made for candidate %q, the override runs function %q; %s",
			name, ErrValidationStale, path, rep.Candidate, fn, fix)
	}
	sum, err := FileSHA256(file)
	if err != nil {
		return nil, fmt.Errorf("override %s: candidate: %w", name, err)
	}
	if rep.CandidateSHA256 != sum {
		return nil, fmt.Errorf("override %s: %w: %s was made for kernel file sha256 %s, but %s now hashes %s "+
			"(the kernel changed since it was validated); %s", name, ErrValidationStale, path,
			short(rep.CandidateSHA256), file, short(sum), fix)
	}
	if o.CapturedShapes != "" {
		cp := o.Resolve(o.CapturedShapes)
		csum, err := FileSHA256(cp)
		if err != nil {
			return nil, fmt.Errorf("override %s: captured_shapes: %w", name, err)
		}
		if rep.CapturedSHA256 != csum {
			return nil, fmt.Errorf("override %s: %w: %s was made for captured shape set sha256 %s (%s), but %s "+
				"hashes %s (the server's shapes were captured again); re-run `transferlab validate` on the new set",
				name, ErrValidationStale, path, short(rep.CapturedSHA256), rep.CapturedFile, cp, short(csum))
		}
	}
	if rep.Verdict != "pass" {
		return rep, fmt.Errorf("override %s: %w: %s says %q: %s; fix the kernel, re-validate, or drop the arm",
			name, ErrValidationFailing, path, rep.Verdict, rep.Reason)
	}
	return rep, nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	if s == "" {
		return "(none)"
	}
	return s
}
