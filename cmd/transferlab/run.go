package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/internal/interrupt"
	"github.com/transferlab/transferlab/shard"
)

// newRunCmd builds `transferlab run CONFIG`: the main job.
func newRunCmd() *cobra.Command {
	var (
		out       string
		quiet     bool
		asJSON    bool
		otel      string
		overwrite bool
		resume    string
		deadline  time.Duration
		sharding  shard.Flags
	)
	cmd := &cobra.Command{
		Use:   "run CONFIG.yaml | run --resume DIR [CONFIG.yaml]",
		Short: "Run an experiment: replay a trace at each offered load against every arm and write records, results.json and reports",
		Long: `run replays the config's trace open-loop at each offered load against the
baseline and every candidate arm, and writes into the output folder:
  records.jsonl  one line per scheduled request, written as each ends
  results.json   schema-versioned results (cells, Amdahl, energy, cost, verdicts)
  cells.jsonl    one line per finished cell, written as each ends (what --resume keeps)
  report.md, report.html
then prints a summary table. When the run did not complete (deadline, a
server that died: exit status 2; SIGINT, SIGTERM: 130, 143) what was
measured is kept and marked incomplete; bad input found before anything was
measured: 1 ("transferlab --help" lists every status). An interrupted run
continues with --resume DIR (the same config, trace and code; without
CONFIG.yaml, the config path DIR's results.json recorded): its complete
cells are kept (cells.jsonl holds what each needs beyond its records), the
others run again, and the reports say which cell was measured when.
A config, and the kernel files it names, are trusted input: they run code on
this machine (server.command.argv, server.reference.python, a candidate's .py
kernel imported into the server); run only configs and kernels you would run
yourself. Traces and results files are data, never executed.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && cmd.Flags().Changed("resume") {
				return nil
			}
			return namedArgs("CONFIG.yaml")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			q := experiment.RunRequest{Resume: resume, Out: out, OutGiven: cmd.Flags().Changed("out"), Overwrite: overwrite,
				Sharded: sharding.Sharded(), OTel: otel, Now: time.Now(), Deadline: deadline}
			if len(args) > 0 {
				q.ConfigPath = args[0]
			}
			run, err := experiment.PrepareRun(cmd.Context(), q, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			// --quiet and --json silence progress, never warnings: a cell that
			// lost more than 5 % of its requests, or whose client was the
			// bottleneck, is still named on stderr.
			var log io.Writer = cmd.ErrOrStderr()
			warn := cmd.ErrOrStderr()
			var progress io.Writer
			if quiet || asJSON {
				log = io.Discard
			} else if isTerminal(cmd.ErrOrStderr()) {
				progress = cmd.ErrOrStderr()
			}
			ctx, cancel := run.Context(cmd.Context())
			defer cancel()
			written := &experiment.Written{}
			res, runErr := sharding.Run(ctx, run.Config, experiment.Options{
				ConfigPath: run.ConfigPath,
				ConfigRaw:  run.Raw,
				OutDir:     run.OutDir,
				Command:    append([]string{"transferlab"}, os.Args[1:]...),
				Log:        log,
				Warn:       warn,
				Progress:   progress,
				Resume:     resume != "",
				Written:    written,
			})
			if res != nil {
				if asJSON {
					if err := printJSON(cmd.OutOrStdout(), res); err != nil {
						return err
					}
				} else if !quiet {
					experiment.PrintSummary(cmd.OutOrStdout(), res)
					experiment.PrintWritten(cmd.OutOrStdout(), run.OutDir, written, runErr)
				}
			}
			if runErr != nil && res == nil {
				return runErr // bad input found before anything was measured: exit status 1
			}
			if runErr != nil {
				return &exitError{code: interrupt.Status(cmd.Context(), exitIncomplete), err: fmt.Errorf("run incomplete (what was measured is in %s): %w", run.OutDir, runErr)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "output folder (default: the config's out, else runs/<config name>-<UTC time>); relative to the working folder")
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "replace a run already in the output folder, or write into a folder that holds other files")
	cmd.Flags().StringVar(&resume, "resume", "", "continue the interrupted run in this folder: keep its cells that ran to their end (same config, trace and code, else refused naming the difference), run the others in the recorded order, and mark the report resumed")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "print nothing but warnings and errors (on stderr): no progress, no summary")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print results.json to stdout instead of the summary table")
	cmd.Flags().StringVar(&otel, "otel", "", "OpenTelemetry export: on, off, stdout, otlp-http[=URL], otlp-grpc[=URL] or a collector URL (overrides the config's otel section; empty fields come from OTEL_EXPORTER_OTLP_*)")
	sharding.AddFlags(cmd.Flags())
	cmd.Flags().DurationVar(&deadline, "deadline", 0, "stop the whole run after this long (records and reports are kept, marked incomplete; exit status 2)")
	return cmd
}

// isTerminal reports whether w is a character device (a terminal): progress
// bars are drawn only there, never into logs or pipes.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
