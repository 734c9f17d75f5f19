package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/spf13/cobra"

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
			if m.Time != "" || m.Input != "" || m.Output != "" {
				opts.Mapping = &m
			}
			if err := checkTraceFlags(first, clamp, rateRPS, cmd.Flags().Changed("rate")); err != nil {
				return err
			}
			s, err := traces.ReadFile(args[0], opts)
			if err != nil {
				return err
			}
			// As an experiment applies them: first N, clamp, then scale.
			if s, err = traces.Trim(s, first, clamp); err != nil {
				return fmt.Errorf("trace stats %s: --first: %w", args[0], err)
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
	f.IntVar(&clamp, "clamp-context", 0, "fit each request into this many context tokens, prompt + output (0: no clamp); clamped rows are counted")
	f.Float64Var(&rateRPS, "rate", 0, "time-scale to this mean rate in req/s (> 0), keeping the burst shape (default: as recorded)")
	f.StringVar(&m.Time, "time-col", "", "generic CSV/JSONL: arrival-time column")
	f.StringVar(&m.TimeUnit, "time-unit", "", "generic CSV/JSONL: unit of the time column: s, ms, us, ns or datetime (default s)")
	f.StringVar(&m.Input, "input-col", "", "generic CSV/JSONL: input-token column")
	f.StringVar(&m.Output, "output-col", "", "generic CSV/JSONL: output-token column")
	f.StringVar(&m.PrefixGroup, "prefix-col", "", "generic CSV/JSONL: optional prefix-group column (an id, or an array of block ids)")
	return cmd
}

// checkTraceFlags refuses each bad `trace stats` flag by its own name, all
// at once: --first and --clamp-context below 0, a --rate given that is not
// a positive finite req/s.
func checkTraceFlags(first, clamp int, rateRPS float64, rateGiven bool) error {
	var errs []error
	if first < 0 {
		errs = append(errs, fmt.Errorf("trace stats: --first %d: must be ≥ 0 (0 keeps every row)", first))
	}
	if clamp < 0 {
		errs = append(errs, fmt.Errorf("trace stats: --clamp-context %d: must be ≥ 0 (0: no clamp)", clamp))
	}
	if rateGiven && (!(rateRPS > 0) || math.IsInf(rateRPS, 0)) {
		errs = append(errs, fmt.Errorf("trace stats: --rate %g: must be a positive, finite req/s", rateRPS))
	}
	return errors.Join(errs...)
}
