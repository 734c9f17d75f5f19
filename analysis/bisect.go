package analysis

import (
	"context"
	"fmt"
)

// Probe measures one offered load (req/s) and reports whether it met the SLOs
// (typically: run the load, BuildCell, CheckSLO == SLOMet).
type Probe func(ctx context.Context, loadRPS float64) (meets bool, err error)

// ProbeResult is one load that FindCapacity measured.
type ProbeResult struct {
	LoadRPS float64 `json:"load_rps"`
	Meets   bool    `json:"meets"`
}

// CapacityBracket is where bisection left capacity: PassRPS met the SLOs and
// FailRPS did not (0 when the highest load met them: capacity ≥ PassRPS; a
// PassRPS of 0 means even the lowest load failed).
type CapacityBracket struct {
	PassRPS float64       `json:"pass_rps"`
	FailRPS float64       `json:"fail_rps"`
	Probes  []ProbeResult `json:"probes"`
}

// FindCapacity bisects the offered load between loRPS and hiRPS for the
// highest load that meets the SLOs, assuming meeting them is monotone in the
// load. It probes loRPS, then hiRPS, then midpoints until FailRPS − PassRPS ≤
// resolutionRPS or maxProbes probes were made (0: no limit besides the
// resolution). Probe errors and a cancelled ctx end the search with an error
// that names the load; the probes made so far are kept in the bracket.
func FindCapacity(ctx context.Context, loRPS, hiRPS, resolutionRPS float64, maxProbes int, probe Probe) (CapacityBracket, error) {
	var b CapacityBracket
	if !(loRPS > 0 && hiRPS > loRPS && resolutionRPS > 0) {
		return b, fmt.Errorf("report: FindCapacity: need 0 < lo (%v) < hi (%v) and resolution (%v) > 0", loRPS, hiRPS, resolutionRPS)
	}
	try := func(load float64) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, fmt.Errorf("report: FindCapacity at %v req/s: %w", load, err)
		}
		ok, err := probe(ctx, load)
		if err != nil {
			return false, fmt.Errorf("report: FindCapacity: probe at %v req/s: %w", load, err)
		}
		b.Probes = append(b.Probes, ProbeResult{LoadRPS: load, Meets: ok})
		return ok, nil
	}
	ok, err := try(loRPS)
	if err != nil || !ok {
		b.FailRPS = loRPS
		return b, err
	}
	b.PassRPS = loRPS
	if ok, err = try(hiRPS); err != nil || ok {
		if ok {
			b.PassRPS = hiRPS
		}
		return b, err
	}
	b.FailRPS = hiRPS
	for b.FailRPS-b.PassRPS > resolutionRPS && (maxProbes <= 0 || len(b.Probes) < maxProbes) {
		mid := (b.PassRPS + b.FailRPS) / 2
		ok, err := try(mid)
		if err != nil {
			return b, err
		}
		if ok {
			b.PassRPS = mid
		} else {
			b.FailRPS = mid
		}
	}
	return b, nil
}
