package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/transferlab/transferlab/traces"
)

// newTraceCmd groups the trace inspection sub-commands.
func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Inspect request traces (Azure, vidur, Mooncake, BurstGPT, generic CSV/JSONL)",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	cmd.AddCommand(newTraceStatsCmd())
	return cmd
}

// newTraceStatsCmd builds `trace stats FILE`: rows, duration, mean rate,
// burstiness and token percentiles of one trace file, as text or JSON.
func newTraceStatsCmd() *cobra.Command {
	var (
		asJSON  bool
		opts    traces.ReadOptions
		m       traces.Mapping
		first   int
		clamp   int
		rateRPS float64
	)
	cmd := &cobra.Command{
		Use:   "stats FILE",
		Short: "Print rows, duration, mean rate, burstiness and token percentiles of a trace",
		Long: "Reads FILE (format detected from its header by column names unless --format is given)\n" +
			"and prints: rows, duration (s), mean rate ((rows-1)/duration, req/s), CV of inter-arrival\n" +
			"gaps, index of dispersion of arrivals per 1 s bin, input/output token percentiles\n" +
			"(nearest rank) and a histogram of arrivals per second. Bad rows fail with file, line\n" +
			"and field unless --lenient, which skips and counts them. --first, --clamp-context and\n" +
			"--rate preview the schedule an experiment would replay (transforms are listed).",
		Args: namedArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			mapped, err := checkTraceFlags(cmd.Flags(), first, clamp, rateRPS)
			if err != nil {
				return err
			}
			if mapped {
				opts.Mapping = &m
			}
			read, err := traces.ReadFile(args[0], opts)
			if err != nil {
				return err
			}
			// As an experiment applies them: first N, clamp, then scale.
			s, err := traces.Trim(read, first, clamp)
			if err != nil {
				return fmt.Errorf("trace stats %s: --first: %w", args[0], err)
			}
			if n := outputsCut(read, s); n > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "trace stats: --clamp-context %d: %d request(s) whose output alone does not fit were cut to 1 prompt + %d output tokens: their output lengths are not the trace's\n", clamp, n, clamp-1)
			}
			if cmd.Flags().Changed("rate") {
				if s, err = traces.ScaleToRate(s, rateRPS); err != nil {
					return fmt.Errorf("trace stats %s: --rate: %w", args[0], err)
				}
			}
			st := traces.ComputeStats(s)
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, st)
			}
			if err := st.WriteText(out); err != nil {
				return fmt.Errorf("trace stats: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the statistics as JSON (keys carry units)")
	f.StringVar(&opts.Format, "format", "", "force the reader: azure, vidur, mooncake, burstgpt, csv or jsonl (default: detect from the header)")
	f.BoolVar(&opts.Lenient, "lenient", false, "skip bad rows and count them by reason instead of failing")
	f.BoolVar(&opts.KeepFailed, "keep-failed", false, "BurstGPT: keep failed requests (0 response tokens) as 1-token requests instead of dropping them")
	f.IntVar(&first, "first", 0, "keep only the first N requests (0: all)")
	f.IntVar(&clamp, "clamp-context", 0, "fit each request into this many context tokens, prompt + output, as a server's max_model_len (0: no clamp, else ≥ 2): a prompt is cut to N − its output (at least 1 token), and an output that alone does not fit is cut to N − 1 (said on stderr); clamped rows are counted")
	f.Float64Var(&rateRPS, "rate", 0, "time-scale to this mean rate in req/s (> 0), keeping the burst shape (default: as recorded)")
	f.StringVar(&m.Time, "time-col", "", "generic CSV/JSONL: arrival-time column (a column mapping needs --time-col, --input-col and --output-col; built-in formats need none)")
	f.StringVar(&m.TimeUnit, "time-unit", "", "generic CSV/JSONL: unit of the time column: s, ms, us, ns or datetime (default s)")
	f.StringVar(&m.Input, "input-col", "", "generic CSV/JSONL: input-token column")
	f.StringVar(&m.Output, "output-col", "", "generic CSV/JSONL: output-token column")
	f.StringVar(&m.PrefixGroup, "prefix-col", "", "generic CSV/JSONL: optional prefix-group column (an id, or an array of block ids)")
	return cmd
}

// checkTraceFlags refuses each bad `trace stats` flag by its own name, all
// at once: --first and --clamp-context below 0, --clamp-context 1 (the
// loader would clamp to 2, the smallest servable context), a --rate given
// that is not a positive finite req/s, a --time-unit not one of the units,
// and a column mapping flag without the three columns a mapping needs (a
// built-in format such as Azure's is read by its header and ignores them).
// mapped says whether a column mapping was given.
func checkTraceFlags(f *pflag.FlagSet, first, clamp int, rateRPS float64) (mapped bool, err error) {
	var errs []error
	if first < 0 {
		errs = append(errs, fmt.Errorf("trace stats: --first %d: must be ≥ 0 (0 keeps every row)", first))
	}
	switch {
	case clamp < 0:
		errs = append(errs, fmt.Errorf("trace stats: --clamp-context %d: must be ≥ 0 (0: no clamp)", clamp))
	case clamp == 1:
		errs = append(errs, fmt.Errorf("trace stats: --clamp-context 1: must be 0 (no clamp) or ≥ 2: the smallest servable context is 1 prompt + 1 generated token"))
	}
	if f.Changed("rate") && (!(rateRPS > 0) || math.IsInf(rateRPS, 0)) {
		errs = append(errs, fmt.Errorf("trace stats: --rate %g: must be a positive, finite req/s", rateRPS))
	}
	if u, _ := f.GetString("time-unit"); f.Changed("time-unit") && !slices.Contains(timeUnits, u) {
		errs = append(errs, fmt.Errorf("trace stats: --time-unit %q: want one of %s", u, strings.Join(timeUnits, ", ")))
	}
	var given, missing []string
	for _, name := range []string{"time-col", "input-col", "output-col", "time-unit", "prefix-col"} {
		switch {
		case f.Changed(name):
			given = append(given, "--"+name)
		case name == "time-col" || name == "input-col" || name == "output-col":
			missing = append(missing, "--"+name)
		}
	}
	if len(given) > 0 && len(missing) > 0 {
		errs = append(errs, fmt.Errorf("trace stats: %s given without %s: a column mapping (a generic CSV/JSONL trace) needs --time-col, --input-col and --output-col; a built-in format (azure, vidur, mooncake, burstgpt) is read by its header and needs none", strings.Join(given, ", "), strings.Join(missing, ", ")))
	}
	return len(given) > 0, errors.Join(errs...)
}

// timeUnits are the units --time-unit accepts (traces.Mapping.TimeUnit).
var timeUnits = []string{traces.UnitSeconds, traces.UnitMilliseconds, traces.UnitMicroseconds, traces.UnitNanoseconds, traces.UnitDatetime}

// outputsCut counts the requests of after (read trimmed by traces.Trim)
// whose output the clamp cut: theirs alone did not fit the context.
func outputsCut(read, after traces.Schedule) int {
	n := 0
	for i, r := range after.Requests {
		if i < len(read.Requests) && r.OutputTokens < read.Requests[i].OutputTokens {
			n++
		}
	}
	return n
}
