package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/canary"
	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/render"
	"github.com/transferlab/transferlab/report"
)

// fromA is how the decision-rule flags' help states their default.
const fromA = "default: A.json's recorded decision rule; without one,"

// newCompareCmd builds `transferlab compare A.json B.json`: the canary
// comparison of two results.json made from the same trace and config. All
// statistics and the verdict come from canary.Compare; this file only wires flags.
func newCompareCmd() *cobra.Command {
	var (
		opts      canary.CompareOptions
		outDir    string
		asJSON    bool
		exitCode  bool
		overwrite bool
	)
	cmd := &cobra.Command{
		Use:   "compare A.json B.json",
		Short: "Compare two results.json from the same trace and config (production vs canary, claim vs re-measurement)",
		Long: `compare reads two results.json files (or the results.json of two run
folders), refuses them when they were made from different traces (by content:
sha256, not path), configs, SLOs or offered loads (unless --force; it lists what
differs), says when they came from different commits, configs, trace paths,
servers or machines, and compares arm --arm-a of A (the baseline) with arm --arm-b of B
(the candidate) with the same statistics and decision rule as a run:
candidate/baseline ratios request by request where both runs kept
per-request figures (requests paired by ID, both runs replaying one
schedule; a block bootstrap inside the cells), else bootstrap intervals over
repetitions (resampled independently: the runs were not interleaved), each
widened by the spread of B's blocks against A's; capacity at SLO; and a
verdict naming its deciding clause, held against A's own resolution (its
A/A replicate and A's own blocks, the figure A's report gives; B's blocks
are not pooled into it). It prints report.md to stdout (or the comparison as JSON
with --json) and with --out writes compare.json, report.md and report.html.
Decision-rule flags not given default to the rule recorded in A.json (the
run's own config), else to the defaults each flag names. The report names
both input files, labelled A and B, with their paths and created times.
Given one run as both A and B (the same created_at: a file twice, or a
copy), it says so first; with --exit-code it then exits 5, the reason on
stderr: a canary gate must not pass what it did not test. Given a run that
did not complete (results.json marks it incomplete: stopped by --deadline,
a signal or a failed stage) as A or B, --exit-code exits 6, the reason on
stderr, whatever the verdict. --out refuses a folder that already holds
files unless --overwrite, and never writes through a symlink.`,
		Args: namedArgs("A.json", "B.json"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := report.ReadResults(args[0])
			if err != nil {
				return err
			}
			b, err := report.ReadResults(args[1])
			if err != nil {
				return err
			}
			if outDir != "" {
				if err := experiment.CheckReportsOut(outDir, overwrite); err != nil {
					return fmt.Errorf("compare: %w", err) // err begins "--out DIR"
				}
			}
			opts.Rule = canary.RuleFromA(opts.Rule, a.Rule, cmd.Flags().Changed)
			opts.PathA, opts.PathB = args[0], args[1]
			c, err := canary.Compare(a, b, opts)
			if err != nil {
				return fmt.Errorf("compare %s %s: %w", args[0], args[1], err)
			}
			c.Results.CreatedAt = time.Now().UTC() // the comparison's own time; A's and B's are in its inputs
			if len(c.Differences) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "transferlab compare: --force: comparing despite %d differences:\n", len(c.Differences))
				for _, d := range c.Differences {
					fmt.Fprintf(cmd.ErrOrStderr(), "  %s\n", d)
				}
			}
			if outDir != "" {
				if err := experiment.WriteReports(outDir, "compare.json", c.Results); err != nil {
					return fmt.Errorf("compare --out %s: %w", outDir, err)
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = printJSON(out, c)
			} else {
				err = render.WriteMarkdown(out, c.Results)
			}
			if err != nil {
				return err
			}
			return verdictExit(c, exitCode)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.ArmA, "arm-a", report.DefaultBaseline, "arm of A.json taken as the baseline")
	f.StringVar(&opts.ArmB, "arm-b", "", "arm of B.json taken as the candidate (default: the same name as --arm-a)")
	f.BoolVar(&opts.Force, "force", false, "compare even when the two results were made from different traces, configs, SLOs or loads")
	// Rule flags have no flag default: a flag not given takes A.json's
	// recorded decision rule (canary.RuleFromA), else report's stated default.
	f.StringVar(&opts.Rule.Metric, "metric", "", fmt.Sprintf("decision metric: %s (%s %q)", analysis.DecisionMetricList(), fromA, report.DefaultRuleMetric))
	f.Float64Var(&opts.Rule.Percentile, "percentile", 0, fmt.Sprintf("decision percentile: 50, 90, 95, 99 or 99.9 (%s %v)", fromA, report.DefaultRulePercentile))
	f.BoolVar(&opts.Rule.UseMean, "mean", false, fmt.Sprintf("decide on the mean instead of a percentile (%s false)", fromA))
	f.Float64Var(&opts.Rule.RegressionMargin, "margin", 0, fmt.Sprintf("tolerated slowdown as a fraction (0.02 = 2 %%): pass when the ratio's interval lies below 1 + margin (%s 0)", fromA))
	f.Uint64Var(&opts.Rule.VRAMBudgetBytes, "vram-budget-bytes", 0, fmt.Sprintf("peak VRAM budget of the candidate in bytes, 0: not declared (%s 0)", fromA))
	f.BoolVar(&opts.Rule.RequireReproducible, "require-reproducible", false, fmt.Sprintf("declare clause d: both runs complete, config and trace hashes recorded (%s false)", fromA))
	f.Float64Var(&opts.Rule.IntervalLevel, "interval", 0, fmt.Sprintf("two-sided bootstrap interval level (%s %v)", fromA, report.DefaultIntervalLevel))
	f.IntVar(&opts.Rule.Resamples, "resamples", 0, fmt.Sprintf("bootstrap resamples (%s %d)", fromA, report.DefaultResamples))
	f.Uint64Var(&opts.Rule.Seed, "seed", 0, fmt.Sprintf("bootstrap seed, recorded in the output (%s %d)", fromA, report.DefaultBootstrapSeed))
	f.StringVar(&outDir, "out", "", "directory to write compare.json, report.md and report.html into; refused when it already holds files, unless --overwrite")
	f.BoolVar(&overwrite, "overwrite", false, "with --out: write into a folder that already holds files, replacing compare.json, report.md and report.html (never through a symlink)")
	f.BoolVar(&asJSON, "json", false, "print the comparison as JSON instead of Markdown")
	f.BoolVar(&exitCode, "exit-code", false, exitCodeHelp)
	return cmd
}

// exitCodeHelp is --exit-code's help: every status the gate can exit with
// (canary.Comparison.Gate, verdictExit), and those of any command.
var exitCodeHelp = fmt.Sprintf("gate on the verdicts (for canary gates): exit 0 when every verdict passes or finds no difference detectable at A's resolution, with no regression beyond L = max(1 + margin, 1 + resolution) left open; "+
	"%d when a verdict is fail (a regression beyond the margin and beyond A's resolution, from its A/A replicate); "+
	"%d when a verdict is inconclusive, or passes or finds no difference but leaves a regression beyond L not ruled out; "+
	"%d when A and B are the same run (nothing tested); %d when A or B is an incomplete run; "+
	"1 on bad input (nothing compared); the reason of a non-zero status on stderr",
	exitFail, exitInconclusive, exitSameRun, exitIncompleteInput)

// verdictExit maps the comparison's gate (canary.Comparison.Gate) to an
// exit status when --exit-code is set.
func verdictExit(c canary.Comparison, enabled bool) error {
	if !enabled {
		return nil
	}
	g, err := c.Gate()
	if err == nil {
		return nil
	}
	code := map[canary.Gate]int{canary.GateSameRun: exitSameRun, canary.GateIncomplete: exitIncompleteInput,
		canary.GateFail: exitFail, canary.GateInconclusive: exitInconclusive}[g]
	return &exitError{code: code, err: err}
}
