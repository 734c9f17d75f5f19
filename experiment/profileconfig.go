package experiment

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/transferlab/transferlab/amdahl"
)

// Defaults of ProfileConfig.
const (
	// DefaultProfileWindow keeps a Chrome trace small: the H200 reference
	// server writes ~58 MB per 1.3 s of torch-profiler window
	// (results/h200-2026-11-29/README.md).
	DefaultProfileWindow = 2 * time.Second
	// MaxProfileWindow caps the window (a 30 s trace would be ~1.3 GB).
	MaxProfileWindow = 30 * time.Second
)

// s timings: which isolated speedup of the validation report the bound pairs with f.
const (
	// STimingGraph is ValidationReport.Speedup.S measured with one call
	// captured in a CUDA graph and replayed: what a CUDA-graph server runs, no
	// launch gaps, but the gaps between the original's kernels inside a replay
	// are in it.
	STimingGraph = "graph"
	// STimingEager is Speedup.SEager: each Python call timed eagerly with CUDA
	// events, launch gaps included (what an eager server runs).
	STimingEager = "eager"
)

// ProfileConfig is `amdahl.profile`: in-run measurement of f from a torch
// profiler window on the baseline arm (reference server only).
//
// Pairing f with s: f is kernel time (the attributed kernels' CUPTI
// durations) over the server's active wall time, whichever s is chosen. s
// from a graph-timed validation report (s_timing: graph, the default) is
// the CUDA-graph replay span of one call, which also removes the idle gaps
// between the original's kernels inside a replay; s_timing: eager times the
// Python call, launch gaps included, and suits an eager server. Neither is a
// pure kernel-time ratio: the bound with graph-timed s on a CUDA-graph server
// is the closest pair the run can make (results/h200-2026-11-29/README.md,
// "Addressable fraction, offline").
type ProfileConfig struct {
	// Window is the torch-profiler window per profiled cell (default
	// DefaultProfileWindow, at most MaxProfileWindow). It opens after the
	// cell's load.warmup.
	Window time.Duration `yaml:"window,omitempty"`
	// KernelSequence attributes runs of consecutive kernels matching these
	// regular expressions in order (amdahl.KernelSequence): how an op made of
	// generic kernels is found in CUDA-graph replays.
	KernelSequence []string `yaml:"kernel_sequence,omitempty"`
	// KernelPattern attributes kernels by name (amdahl.KernelPattern).
	KernelPattern string `yaml:"kernel_pattern,omitempty"`
	// Annotation is the record_function range name around the target's calls
	// (default amdahl.DefaultTargetAnnotation, "transferlab::target").
	Annotation string `yaml:"annotation,omitempty"`
	// STiming picks s from the validation report: graph (default,
	// Speedup.S, CUDA-graph timed) or eager (Speedup.SEager).
	STiming string `yaml:"s_timing,omitempty"`
}

// Validate reports every problem at once, each naming its field.
func (p *ProfileConfig) Validate() error {
	var errs []error
	if p.Window < 0 || p.Window > MaxProfileWindow {
		errs = append(errs, fmt.Errorf("amdahl.profile.window: %s, want in (0, %s] (0 or unset: %s)", p.Window, MaxProfileWindow, DefaultProfileWindow))
	}
	for i, s := range p.KernelSequence {
		if s == "" {
			errs = append(errs, fmt.Errorf("amdahl.profile.kernel_sequence[%d]: empty", i))
		} else if _, err := regexp.Compile(s); err != nil {
			errs = append(errs, fmt.Errorf("amdahl.profile.kernel_sequence[%d]: %w", i, err))
		}
	}
	if p.KernelPattern != "" {
		if _, err := regexp.Compile(p.KernelPattern); err != nil {
			errs = append(errs, fmt.Errorf("amdahl.profile.kernel_pattern: %w", err))
		}
	}
	switch p.STiming {
	case "", STimingGraph, STimingEager:
	default:
		errs = append(errs, fmt.Errorf("amdahl.profile.s_timing: %q, want graph or eager", p.STiming))
	}
	return errors.Join(errs...)
}

// effective returns a copy with the defaults filled in.
func (p ProfileConfig) effective() ProfileConfig {
	if p.Window == 0 {
		p.Window = DefaultProfileWindow
	}
	if p.Annotation == "" {
		p.Annotation = amdahl.DefaultTargetAnnotation
	}
	if p.STiming == "" {
		p.STiming = STimingGraph
	}
	return p
}

// options are the attribution options of amdahl's Chrome reader.
func (p ProfileConfig) options() ([]amdahl.Option, error) {
	names, err := amdahl.KernelNames(p.KernelPattern, p.KernelSequence)
	if err != nil {
		return nil, fmt.Errorf("amdahl.profile: %w", err)
	}
	return append([]amdahl.Option{amdahl.TargetAnnotation(p.Annotation)}, names...), nil
}
