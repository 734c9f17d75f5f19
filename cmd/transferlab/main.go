// Command transferlab swaps validated GPU kernels into a pinned inference
// server, replays request traces at controlled offered loads, and compares the
// measured service-level gain with the Amdahl bound. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
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
	// exitInconclusive: compare --exit-code, verdict inconclusive.
	exitInconclusive = 4
)

// exitStatusHelp is the scheme as the root help and README print it.
const exitStatusHelp = `Exit status (every sub-command):
  0        done (compare --exit-code: verdict pass, or no difference detectable at A's resolution)
  1        error: bad input, missing software; nothing was measured
  2        incomplete: --deadline, a server that died, a failed stage; what was measured is kept
  3        a check failed: compare --exit-code verdict fail; validate verdicts not as expected
  4        compare --exit-code: verdict inconclusive
  130, 143 interrupted by SIGINT, SIGTERM; what was measured is kept (a second interrupt exits at once)`

// stoppedStatus is the exit status of work that stopped before its end
// under ctx: 128 + the signal's number when a signal stopped it (130 for
// SIGINT, 143 for SIGTERM), else exitIncomplete.
func stoppedStatus(ctx context.Context) int {
	var ie interruptedError
	if errors.As(context.Cause(ctx), &ie) {
		return signalExitCode(ie.sig)
	}
	return exitIncomplete
}

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

// doubleSignalWindow is how soon a repeated interrupt counts as the same one.
const doubleSignalWindow = 500 * time.Millisecond

// run executes the CLI and returns the exit status. A first SIGINT/SIGTERM
// cancels the context with a cause naming the signal ("interrupted by
// SIGINT"; runs flush, write their reports and give that as the incomplete
// reason); a second exits at once.
func run(args []string) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	root := newRootCmd()
	root.SetArgs(args)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go watchSignals(sigs, cancel, onInterrupt(root, args), os.Stderr, os.Exit)

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

// onInterrupt is the note watchSignals prints on a first interrupt of the
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

// interruptedError is the run context's cancellation cause when a signal
// stopped it; its text is what results.json's incomplete_reason and the
// console give.
type interruptedError struct{ sig os.Signal }

func (e interruptedError) Error() string { return "interrupted by " + signalName(e.sig) }

// Signal is the signal that stopped the run (clientbench reads it for its exit status).
func (e interruptedError) Signal() os.Signal { return e.sig }

// signalName is the conventional name of the signals the CLI handles.
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// watchSignals cancels the run with cause interruptedError on the first
// signal from sigs, printing note (what stopping does), and calls exit(128 +
// the signal's number: 130 for SIGINT, 143 for SIGTERM) on a later one,
// unless it comes within doubleSignalWindow of the first. It returns when
// sigs is closed.
func watchSignals(sigs <-chan os.Signal, cancel context.CancelCauseFunc, note string, stderr io.Writer, exit func(int)) {
	sig, ok := <-sigs
	if !ok {
		return
	}
	fmt.Fprintf(stderr, "transferlab: %s: %s (interrupt again to exit now)\n", signalName(sig), note)
	cancel(interruptedError{sig})
	first := time.Now()
	for range sigs {
		// Tools such as timeout(1) deliver one interrupt twice within
		// microseconds (to the process, then to its group): that is one
		// request to stop, not an insistence to exit now.
		if time.Since(first) < doubleSignalWindow {
			continue
		}
		exit(signalExitCode(sig))
		return
	}
}

// signalExitCode is the shell's status for death by sig: 128 + its number
// (130 for anything that is not a syscall.Signal).
func signalExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
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
