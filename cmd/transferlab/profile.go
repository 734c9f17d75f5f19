package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/experiment"
)

// newProfileCmd builds `profile`: read one profile of the baseline server
// (PyTorch Chrome trace, Nsight Systems SQLite export, or the hook's own
// timings) and print the addressable fraction of the target op: f_gpu,
// f_wall with its interval over windows, f_excl, per phase where the profile
// tells them apart (amdahl.Summarize). Running the baseline with profiling on
// is the run command's job; it calls amdahl.Summarize the same way.
func newProfileCmd() *cobra.Command {
	var (
		format, target, pattern, records string
		serverWindow, against            string
		phases, sequence, hookWindows    []string
		windows                          int
		recordsOffsetNs                  int64
		seed                             uint64
		asJSON                           bool
	)
	cmd := &cobra.Command{
		Use:   "profile FILE",
		Short: "Addressable fraction f of a target op from a profile (Chrome trace, Nsight SQLite, or hook timings)",
		Long: "Reads FILE and prints target GPU time, GPU busy time (union across streams), active wall time,\n" +
			"f_gpu = target/busy, f_wall = target/active wall (with a bootstrap interval over windows; the\n" +
			"bound uses it), f_excl (target not overlapped by other work / active wall, a lower bound), and\n" +
			"the same per prefill/decode where the profile's phase ranges say so. Attribution rules and\n" +
			"range names: amdahl/PROFILES.md; hook file format: amdahl/HOOK_TIMINGS.md.\n" +
			"Active wall time: --records (requests' [sent, end] intervals), else the server's count in\n" +
			"FILE.window.json / --server-window, else the whole profiled span (idle gaps not removed).\n" +
			"A profile without target ranges (CUDA-graph replays, a server started without the hook's ranges)\n" +
			"needs the target's kernels named: --target PRESET, or --kernel-pattern / --kernel-seq. Presets:\n" +
			amdahl.TargetPresetHelp(),
		Args: namedArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			f, err := amdahl.ResolveFormat(format, path)
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("profile: %w", err) // a missing file: no --format reads it
			}
			if err != nil {
				return fmt.Errorf("profile: %w; pass --format chrome|nsys|hook", err)
			}
			cfg := amdahl.SummaryConfig{Windows: windows, Boot: []amdahl.BootOption{amdahl.Seed(seed)}}
			if err := cfg.SetTarget(target, f, hookWindows); err != nil {
				return fmt.Errorf("profile: --target %s: %w", target, err)
			}
			names, err := amdahl.KernelNames(pattern, sequence)
			if err != nil {
				return fmt.Errorf("profile: --kernel-pattern / --kernel-seq: %w", err)
			}
			phaseNames, err := amdahl.PhaseAnnotations(phases)
			if err != nil {
				return fmt.Errorf("profile: --%w", err)
			}
			cfg.Options = append(append(cfg.Options, names...), phaseNames...)
			if records != "" {
				if cfg.Active, err = experiment.ActiveFromRecordsFile(records, time.Duration(recordsOffsetNs)); err != nil {
					return fmt.Errorf("profile: --records: %w", err)
				}
			} else if f != amdahl.FormatHook {
				sw, err := cfg.SetServerWindow(path, serverWindow)
				if err != nil {
					return fmt.Errorf("profile: %w", err)
				}
				if sw != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "profile: active wall time %.3f s from %s (server's count)\n", cfg.ActiveWall.Seconds(), sw)
				}
			}
			if against != "" {
				if f != amdahl.FormatHook {
					return fmt.Errorf("profile: --against needs FILE to be a hook timing file, not %s", f)
				}
				a, err := amdahl.CompareHookFile(cmd.Context(), path, cfg.Target, against, cfg.Options...)
				if err != nil {
					return fmt.Errorf("profile: --against %s: %w", against, err)
				}
				return a.WriteText(cmd.OutOrStdout(), path, against)
			}
			s, err := amdahl.Summarize(cmd.Context(), path, f, cfg)
			if errors.Is(err, amdahl.ErrNoAttribution) {
				return fmt.Errorf("profile: %w; name the target's kernels with a preset, --target %s, or with --kernel-pattern / --kernel-seq",
					err, strings.ReplaceAll(amdahl.TargetPresetNames(), ", ", " | "))
			}
			if err != nil {
				return fmt.Errorf("profile: %w", err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, s)
			}
			return s.WriteText(out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "", "chrome | nsys | hook (default: from the file: .sqlite → nsys, a JSON with \"transferlab.hook_timings\" → hook, other JSON → chrome)")
	fl.StringVar(&target, "target", "", "a preset (below) naming the target's kernels, or chrome/nsys: the range name around target calls (default "+amdahl.DefaultTargetAnnotation+"); hook: the target op the file must be about")
	fl.StringVar(&pattern, "kernel-pattern", "", "regexp over kernel names: attributes CUDA-graph replays, and every kernel when the profile has no target range")
	fl.StringArrayVar(&sequence, "kernel-seq", nil, "regexp for one step of a kernel sequence (repeat in order): runs of consecutive kernels on a stream matching the steps are target (graph replays, or all kernels without a target range)")
	fl.StringArrayVar(&phases, "phase", nil, "RANGE_NAME=PHASE: a range name that marks a phase (repeatable; defaults transferlab::prefill, ::decode, ::mixed)")
	fl.StringArrayVar(&hookWindows, "window-label", nil, "hook files: keep only windows with this label (repeatable; e.g. the cell's window)")
	fl.IntVar(&windows, "windows", 4, "chrome/nsys: equal windows the span is cut into for f_wall's interval (hook files carry their own)")
	fl.StringVar(&records, "records", "", "records.jsonl of the run profiled: active wall time = union of the requests' [sent, end] intervals")
	fl.Int64Var(&recordsOffsetNs, "records-offset-ns", 0, "added to the records' offsets (ns from run start) to put them on the profile's clock (hook files: the run's start as Unix ns)")
	fl.StringVar(&serverWindow, "server-window", "", "JSON with the server's window_s/active_s for the profiled window (default: FILE.window.json beside a trace, if present)")
	fl.StringVar(&against, "against", "", "hook files: compare the hook's target time with this trace's (chrome or nsys) over the same calls (those launched in the hook windows inside the trace): against their GPU span and their kernel time (they agree within 2 % of the span on a GPU-bound eager run)")
	fl.Uint64Var(&seed, "seed", 1, "bootstrap seed")
	fl.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}
