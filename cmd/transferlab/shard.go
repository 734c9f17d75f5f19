package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/shard"
)

// shardFlags are `run`'s flags for one shard of a run split over processes.
type shardFlags struct {
	spec, startAt, clockRef string
	gap, clockTolerance     time.Duration
}

func (f *shardFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.spec, "shard", "", "replay shard `i/N` of every cell's schedule (requests whose index mod N is i), to be merged by transferlab merge; needs --start-at and a server every shard reaches")
	cmd.Flags().StringVar(&f.startAt, "start-at", "", "with --shard: the shared absolute start of the first cell (RFC 3339, e.g. 2026-12-01T22:00:00Z), the same on every shard")
	cmd.Flags().DurationVar(&f.gap, "cell-gap", 0, "with --shard: time between one cell's last arrival and the next cell's shared start (default: request.timeout)")
	cmd.Flags().StringVar(&f.clockRef, "clock-ref", "", "with --shard: NTP server (host:port) to estimate this shard's clock offset against (default: not measured)")
	cmd.Flags().DurationVar(&f.clockTolerance, "clock-tolerance", shard.DefaultClockTolerance, "with --shard: flag the shard when |clock offset| + its bound exceeds this")
}

// run runs the experiment, as one shard when --shard is given.
func (f *shardFlags) run(ctx context.Context, cmd *cobra.Command, cfg *experiment.Config, opt experiment.Options) (*report.Results, error) {
	if f.spec == "" {
		for _, name := range []string{"start-at", "cell-gap", "clock-ref", "clock-tolerance"} {
			if cmd.Flags().Changed(name) {
				return nil, fmt.Errorf("--%s: only with --shard", name)
			}
		}
		return experiment.Run(ctx, cfg, opt)
	}
	spec, err := shard.ParseSpec(f.spec)
	if err != nil {
		return nil, fmt.Errorf("--shard: %w", err)
	}
	if f.startAt == "" {
		return nil, fmt.Errorf("--start-at: required with --shard (RFC 3339, the same on every shard)")
	}
	at, err := time.Parse(time.RFC3339Nano, f.startAt)
	if err != nil {
		return nil, fmt.Errorf("--start-at %q: want RFC 3339 (e.g. 2026-12-01T22:00:00Z): %w", f.startAt, err)
	}
	return shard.Run(ctx, cfg, opt, shard.Options{Spec: spec, StartAt: at, Gap: f.gap, ClockRef: f.clockRef, ClockTolerance: f.clockTolerance})
}

// newMergeCmd builds `transferlab merge OUT SHARD_DIR...`.
func newMergeCmd() *cobra.Command {
	var (
		quiet bool
		wait  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "merge OUT SHARD_DIR...",
		Short: "Merge the output folders of `run --shard i/N` into the one run they split",
		Long: `merge checks that the shard folders come from one run (same config, trace,
seed, code, arm/repetition order, shard count and start time) and together
hold every scheduled request exactly once, then writes into OUT what a single
machine's run writes: records.jsonl, results.json, report.md, report.html,
with percentiles computed from the merged records, plus hdr.log (the shards'
HDR histograms merged, nothing dropped) and shards.json (each shard's clock
and time shift). A missing, duplicated, killed or foreign shard is an error
naming it. Server-side figures (profile, energy) come from shard 0.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := args[0]
			for _, f := range []string{experiment.ResultsFile, experiment.RecordsFile} {
				if _, err := os.Stat(filepath.Join(out, f)); err == nil {
					return fmt.Errorf("output folder %s already holds a run (%s): choose another", out, f)
				}
			}
			if wait > 0 {
				if err := shard.WaitFinished(cmd.Context(), args[1:], wait, 2*time.Second); err != nil {
					return err
				}
			}
			var log io.Writer = cmd.ErrOrStderr()
			if quiet {
				log = io.Discard
			}
			written := &experiment.Written{}
			res, err := shard.Merge(args[1:], shard.MergeOptions{
				OutDir: out, Command: append([]string{"transferlab"}, os.Args[1:]...), Log: log, Warn: cmd.ErrOrStderr(), Written: written,
			})
			if err != nil {
				return err
			}
			if !quiet {
				experiment.PrintSummary(cmd.OutOrStdout(), res)
				fmt.Fprintf(cmd.OutOrStdout(), "\nmerged %d shards into %s: %s\n", len(args)-1, out, strings.Join(written.Names(nil), ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&quiet, "quiet", false, "print nothing but warnings and errors")
	cmd.Flags().DurationVar(&wait, "wait", 0, "first wait up to this long for every shard folder to hold a finished shard.json (shards still running elsewhere); a shard that ended early (shard.json ended_early) ends the wait at once, and one whose heartbeat stopped (shard.json beats unchanged for 6 periods: killed outright) ends it too")
	return cmd
}
