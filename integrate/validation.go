package integrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/transferlab/transferlab/internal/outpath"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ValidationFormat is the report format validate_gate.py writes.
const ValidationFormat = "transferlab.validation/v1"

// CapturedFormat is the captured shape set format (WriteCapturedSet).
const CapturedFormat = "transferlab.captured_shapes/v1"

// Gates, in the order whose first failure is a report's reason (validate_gate.py).
var Gates = []string{"launch", "shape_dtype", "all_written", "values", "nan_inf", "deterministic"}

// ValidationReport is the part of the gate's report (validate_gate.py) that Go reads.
type ValidationReport struct {
	Format          string `json:"format"`
	CreatedAt       string `json:"created_at"`
	Target          string `json:"target"`
	Candidate       string `json:"candidate"`
	CandidateFile   string `json:"candidate_file"`
	CandidateSHA256 string `json:"candidate_sha256"`
	CapturedFile    string `json:"captured_file"`
	CapturedSHA256  string `json:"captured_sha256"`
	// CapturedSignatures and CapturedCalls describe the captured set; Coverage is
	// the fraction of captured calls whose signature was validated.
	CapturedSignatures  int     `json:"captured_signatures"`
	CapturedCalls       int     `json:"captured_calls"`
	ValidatedSignatures int     `json:"validated_signatures"`
	Coverage            float64 `json:"coverage"`
	// Verdict is pass or fail; Reason names the first failing gate, set and input.
	Verdict    string `json:"verdict"`
	Reason     string `json:"reason"`
	FailedGate string `json:"failed_gate"`
	FailedSet  string `json:"failed_set"`
	// Gates maps gate → set ("captured", "stress") → outcome.
	Gates   map[string]map[string]GateOutcome `json:"gates"`
	Speedup struct {
		// S is the frequency-weighted geometric mean of per-signature isolated
		// speedups (original median / candidate median, CUDA events); nil if none was timed.
		S *float64 `json:"s"`
		// SEager is the same mean with each call timed eagerly (launch gaps included).
		SEager *float64 `json:"s_eager"`
		// Timing is "graph" (one call captured in a CUDA graph, replayed: what a
		// CUDA-graph server runs) or "eager".
		Timing string `json:"timing"`
		Method string `json:"method"`
	} `json:"speedup"`
	Shapes []ValidatedShape `json:"shapes"`
	Shadow *struct {
		CallsDone int            `json:"calls_done"`
		Worst     map[string]any `json:"worst"`
	} `json:"shadow"`
	// SHA256 is the hash of the report file's bytes (filled by ReadValidationReport).
	SHA256 string `json:"-"`
	// Path is where it was read from.
	Path string `json:"-"`
}

// GateOutcome is one gate on one set of signatures.
type GateOutcome struct {
	Checked      int  `json:"checked"`
	Failed       int  `json:"failed"`
	Pass         bool `json:"pass"`
	FirstFailure any  `json:"first_failure"`
}

// ValidatedShape is one signature's row of the per-shape table.
type ValidatedShape struct {
	Set              string          `json:"set"`
	Name             string          `json:"name,omitempty"`
	Signature        json.RawMessage `json:"signature"`
	Count            int             `json:"count"`
	FirstFailingGate string          `json:"first_failing_gate"`
	// OrigUs and CandUs are median CUDA-event times of one call, µs; Speedup = OrigUs/CandUs.
	OrigUs  float64 `json:"orig_us"`
	CandUs  float64 `json:"cand_us"`
	Speedup float64 `json:"speedup"`
	// OrigEagerUs and CandEagerUs are the same call timed eagerly (launch
	// gaps included), µs, in reports of graph-timed validation (0 when
	// absent): the rows of speedup.s_eager.
	OrigEagerUs float64 `json:"orig_eager_us,omitempty"`
	CandEagerUs float64 `json:"cand_eager_us,omitempty"`
}

// ReadValidationReport reads and checks a report; errors name the file and field.
func ReadValidationReport(path string) (*ValidationReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("validation report: %w", err)
	}
	var r ValidationReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("validation report %s: %w", path, err)
	}
	var errs []error
	if r.Format != ValidationFormat {
		errs = append(errs, fmt.Errorf("format: want %q, got %q", ValidationFormat, r.Format))
	}
	if r.Verdict != "pass" && r.Verdict != "fail" {
		errs = append(errs, fmt.Errorf("verdict: want pass or fail, got %q", r.Verdict))
	}
	if r.Target == "" {
		errs = append(errs, errors.New("target: empty"))
	}
	if len(r.CandidateSHA256) != 64 {
		errs = append(errs, fmt.Errorf("candidate_sha256: %q is not a sha256", r.CandidateSHA256))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("validation report %s: %w", path, err)
	}
	for i := range r.Shapes {
		var c bytes.Buffer
		if json.Compact(&c, r.Shapes[i].Signature) == nil {
			r.Shapes[i].Signature = c.Bytes() // one line: it is printed in report tables
		}
	}
	sum, _ := FileSHA256(path)
	r.SHA256, r.Path = sum, path
	return &r, nil
}

// WriteCapturedSet writes the signatures one override saw in capture (or shadow)
// mode, with counts, as the gate's input. It fails if the override is not in the
// stats or saw nothing.
func WriteCapturedSet(path string, st *HookStats, override string) error {
	o := st.Override(override)
	if o == nil {
		return fmt.Errorf("integrate: captured set: override %q not in the hook stats", override)
	}
	if len(o.Shapes) == 0 {
		return fmt.Errorf("integrate: captured set: override %q (mode %s) recorded no signatures (calls %v)",
			override, o.Mode, o.Calls)
	}
	doc := map[string]any{"format": CapturedFormat, "target": o.Target, "shapes": o.Shapes,
		"calls": o.Calls}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return err
	}
	return outpath.WriteFile(path, append(b, '\n'))
}

// ValidationJob is one run of the gate (validate_gate.py's JOB.json).
type ValidationJob struct {
	Target       string `json:"target"`
	Candidate    string `json:"candidate"` // absolute file.py:function
	CapturedFile string `json:"captured_file"`
	ShadowFile   string `json:"shadow_file,omitempty"`
	Report       string `json:"report"`
	FailingDir   string `json:"failing_dir,omitempty"`
	Repeats      int    `json:"repeats"`
	Warmup       int    `json:"warmup"`
	MaxShapes    int    `json:"max_shapes"`
	Seed         int64  `json:"seed"`
	// Timing is "graph" (default) or "eager"; see ValidationReport.Speedup.
	Timing string `json:"timing,omitempty"`
}

// RunValidation writes the embedded gate into workDir/python, runs it with
// python on job, and returns the report it wrote. A failing verdict is a report,
// not an error; an error means the gate itself could not run (log tail quoted).
func RunValidation(ctx context.Context, python, workDir string, job ValidationJob) (*ValidationReport, error) {
	if job.Repeats < 30 {
		job.Repeats = 30
	}
	if job.Warmup <= 0 {
		job.Warmup = 5
	}
	if job.MaxShapes <= 0 {
		job.MaxShapes = 64
	}
	pyDir, err := WriteEmbeddedPython(workDir)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(job.Report), filepath.Ext(job.Report))
	jobPath := filepath.Join(workDir, name+".job.json")
	b, _ := json.MarshalIndent(job, "", " ")
	if err := outpath.WriteFile(jobPath, b); err != nil {
		return nil, fmt.Errorf("integrate: validation job: %w", err)
	}
	logPath := filepath.Join(workDir, name+".log")
	logf, err := outpath.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("integrate: validation log: %w", err)
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, python, filepath.Join(pyDir, "validate_gate.py"), jobPath)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = logf
	cmd.Env = mergeEnv(os.Environ(), []string{"PYTHONUNBUFFERED=1", EnvOverrideManifest + "="})
	runErr := cmd.Run()
	_, _ = logf.Write(out.Bytes())
	if runErr != nil {
		var ee *exec.ExitError
		if !errors.As(runErr, &ee) || ee.ExitCode() != 2 {
			return nil, fmt.Errorf("integrate: validation gate: %w; log %s ends:\n%s", runErr, logPath,
				fileTail(logPath, tailBytes))
		}
	}
	return ReadValidationReport(job.Report)
}
