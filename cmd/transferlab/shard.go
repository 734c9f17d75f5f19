package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/shard"
)

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
		Args: namedArgs("OUT", "SHARD_DIR..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := args[0]
			var log io.Writer = cmd.ErrOrStderr()
			if quiet {
				log = io.Discard
			}
			written := &experiment.Written{}
			res, err := shard.Merge(cmd.Context(), args[1:], shard.MergeOptions{
				OutDir: out, Command: append([]string{"transferlab"}, os.Args[1:]...), Log: log, Warn: cmd.ErrOrStderr(), Wait: wait, Written: written,
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
