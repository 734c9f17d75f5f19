// Command transferlab swaps validated GPU kernels into a pinned inference
// server, replays request traces at controlled offered loads, and compares the
// measured service-level gain with the Amdahl bound. See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/transferlab/transferlab/internal/interrupt"
)

// Exit statuses, the same for every sub-command (root help and README list
// them).
const (
	// exitIncomplete: the work stopped before its end (--deadline, a server
	// that died, a failed stage); what was measured is kept and marked
	// incomplete.
	exitIncomplete = 2
	// exitFail: a check failed (compare --exit-code: verdict fail; validate:
	// a candidate or control not judged as expected).
	exitFail = 3
	// exitInconclusive: compare --exit-code, verdict inconclusive, or a
	// pass or no difference with a regression not ruled out (canary.Gate).
	exitInconclusive = 4
	// exitSameRun: compare --exit-code given one run as both A and B
	// (canary.SameRun): nothing was tested, so the gate neither passes nor fails.
	exitSameRun = 5
	// exitIncompleteInput: compare --exit-code given a run (A or B) that
	// did not complete (stopped by --deadline, a signal, a failed stage):
	// the gate neither passes nor fails what was only partly measured.
	exitIncompleteInput = 6
)

// exitStatusHelp is the scheme as the root help and README print it.
const exitStatusHelp = `Exit status (every sub-command):
  0        done (compare --exit-code: verdict pass, or no difference detectable at A's resolution, no regression beyond L left open)
  1        error: bad input, missing software; nothing was measured
  2        incomplete: --deadline, a server that died, a failed stage; what was measured is kept
  3        a check failed: compare --exit-code verdict fail; validate verdicts not as expected
  4        compare --exit-code: verdict inconclusive, or a regression beyond L not ruled out (the reason on stderr)
  5        compare --exit-code: A and B are the same run, so the canary was not tested (the reason on stderr)
  6        compare --exit-code: A or B is an incomplete run (stopped early), so the gate decides nothing (the reason on stderr)
  130, 143 interrupted by SIGINT, SIGTERM; what was measured is kept (a second interrupt exits at once)`

// exitError carries a process exit status through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the CLI and returns the exit status. A first SIGINT/SIGTERM
// cancels the context with a cause naming the signal; a second exits at
// once (package interrupt).
func run(args []string) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	root := newRootCmd()
	root.SetArgs(args)
	defer interrupt.Notify(cancel, onInterrupt(root, args), os.Stderr, os.Exit)()

	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "transferlab: %v\n", err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// newRootCmd builds the sub-command table explicitly (no init() registration).
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "transferlab",
		Short:         "Measure how much of a GPU kernel's isolated speedup survives at the service level",
		Long:          "Measure how much of a GPU kernel's isolated speedup survives at the service level.\n\n" + exitStatusHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newRunCmd(),
		newServeSimCmd(),
		newTraceCmd(),
		newBenchClientCmd(),
		newCompareCmd(),
		newValidateCmd(),
		newProfileCmd(),
		newMergeCmd(),
		newK8sCmd(),
	)
	return root
}

// interruptNote says what a first interrupt does to the sub-command name,
// for those that measure or serve; the others just stop.
func interruptNote(name string) (string, bool) {
	switch name {
	case "run", "validate", "bench-client":
		return "stopping and keeping what was measured", true
	case "serve-sim":
		return "stopping the server", true
	}
	return "", false
}

// onInterrupt is the note interrupt.Watch prints on a first interrupt of the
// sub-command args name.
func onInterrupt(root *cobra.Command, args []string) string {
	if c, _, err := root.Find(args); err == nil {
		for ; c != nil; c = c.Parent() {
			if n, ok := interruptNote(c.Name()); ok {
				return n
			}
		}
	}
	return "stopping"
}

// printJSON writes v to w as indented JSON (every command's --json).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// groupRunE makes a command that only groups sub-commands fail on an unknown
// sub-command (cobra otherwise prints the help and exits 0) and print its help
// when called bare.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Errorf("%s; its sub-commands: %s", msg, strings.Join(names, ", "))
}

// namedArgs accepts exactly the positional arguments names (NAME... last:
// one or more of it) and refuses others with a message naming the missing
// argument, or the extra ones, and the command's usage line ("run: CONFIG.yaml
// missing: usage: transferlab run CONFIG.yaml [flags]"), not cobra's
// "accepts 1 arg(s), received 0".
func namedArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		variadic := len(names) > 0 && strings.HasSuffix(names[len(names)-1], "...")
		switch {
		case len(args) < len(names):
			missing := make([]string, 0, len(names)-len(args))
			for _, n := range names[len(args):] {
				missing = append(missing, strings.TrimSuffix(n, "..."))
			}
			return fmt.Errorf("%s: %s missing: usage: %s", path, strings.Join(missing, " and "), cmd.UseLine())
		case len(args) > len(names) && !variadic:
			return fmt.Errorf("%s: unexpected argument(s) %q: it takes %s: usage: %s", path, args[len(names):], strings.Join(names, " "), cmd.UseLine())
		}
		return nil
	}
}
