package experiment

import (
	"errors"
	"fmt"
	"math"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/integrate"
)

// validatedSpeedup is s from the candidate's validation report: the
// frequency-weighted geometric mean over the captured shapes, with a
// bootstrap interval over shapes. Without amdahl.profile it uses the
// per-shape times the report's own timing produced (orig_us/cand_us: the
// same figures as its speedup.s). With amdahl.profile, s_timing picks them:
// graph needs a graph-timed report and reproduces speedup.s; eager uses the
// eager per-shape times (orig_eager_us/cand_eager_us) and reproduces
// speedup.s_eager (a report without speedup.timing predates graph timing and
// was timed eagerly: its orig_us/cand_us and speedup.s are used). Either way the point value must agree with the report's
// own aggregate (relative 1e-6), or the report's table and its s disagree.
func (r *runner) validatedSpeedup(arm ArmConfig) (amdahl.Estimate, error) {
	if arm.Override == nil {
		return amdahl.Estimate{}, errors.New("no override and no sim_overrides: nothing to bound")
	}
	o := *arm.Override
	rep, err := integrate.CheckValidation(o)
	if err != nil {
		return amdahl.Estimate{}, err
	}
	if rep == nil {
		return amdahl.Estimate{}, fmt.Errorf("override mode %s swaps nothing", o.EffectiveMode())
	}
	timing := ""
	if p := r.cfg.Amdahl.Profile; p != nil {
		timing = p.effective().STiming
	}
	rows, want, field, err := speedupRows(rep, timing)
	if err != nil {
		return amdahl.Estimate{}, err
	}
	if len(rows) == 0 {
		return amdahl.Estimate{}, fmt.Errorf("validation report %s has no timed captured shape", rep.Path)
	}
	est, err := amdahl.IsolatedSpeedupEstimate(rows, amdahl.Seed(uint64(r.cfg.Seed)))
	if err != nil {
		return amdahl.Estimate{}, err
	}
	if want != nil && math.Abs(float64(est.Value)-*want) > 1e-6**want {
		return amdahl.Estimate{}, fmt.Errorf("validation report %s: field %s is %g but its captured shapes' count-weighted geometric mean is %g: the report is inconsistent; re-run `transferlab validate`",
			rep.Path, field, *want, float64(est.Value))
	}
	if timing == "" {
		timing = rep.Speedup.Timing
	}
	est.Method += fmt.Sprintf("; s timing %s (%s of %s)", timing, field, rep.Path)
	return est, nil
}

// speedupRows are the captured shapes' timed rows for s with the given
// timing ("": the report's own), the report's aggregate they must reproduce
// (nil when the report has none) and that aggregate's field name.
func speedupRows(rep *integrate.ValidationReport, timing string) ([]amdahl.ShapeSpeedup, *float64, string, error) {
	var rows []amdahl.ShapeSpeedup
	switch timing {
	case "", STimingGraph:
		if timing == STimingGraph && rep.Speedup.Timing != STimingGraph {
			return nil, nil, "", fmt.Errorf("validation report %s: field speedup.timing is %q, but amdahl.profile.s_timing is graph: validate with graph timing, or set s_timing: eager",
				rep.Path, rep.Speedup.Timing)
		}
		for _, s := range rep.Shapes {
			if s.Set == "captured" && s.OrigUs > 0 && s.CandUs > 0 {
				rows = append(rows, amdahl.ShapeSpeedup{Shape: string(s.Signature), Count: s.Count, OriginalMedianUs: s.OrigUs, CandidateMedianUs: s.CandUs})
			}
		}
		return rows, rep.Speedup.S, "speedup.s", nil
	case STimingEager:
		if rep.Speedup.Timing == "" && rep.Speedup.SEager == nil {
			// Reports from before graph timing existed timed eagerly: their
			// orig_us/cand_us and speedup.s are eager times.
			return speedupRows(rep, "")
		}
		if rep.Speedup.SEager == nil {
			return nil, nil, "", fmt.Errorf("validation report %s: field speedup.s_eager is missing, but amdahl.profile.s_timing is eager: re-run `transferlab validate` (reports since the graph-timing rerun carry it)", rep.Path)
		}
		for _, s := range rep.Shapes {
			if s.Set == "captured" && s.OrigEagerUs > 0 && s.CandEagerUs > 0 {
				rows = append(rows, amdahl.ShapeSpeedup{Shape: string(s.Signature), Count: s.Count, OriginalMedianUs: s.OrigEagerUs, CandidateMedianUs: s.CandEagerUs})
			}
		}
		return rows, rep.Speedup.SEager, "speedup.s_eager", nil
	}
	return nil, nil, "", fmt.Errorf("amdahl.profile.s_timing: %q, want graph or eager", timing)
}
