// Command transferlab swaps validated GPU kernels into a pinned inference
// server, replays request traces at controlled offered loads, and compares the
// measured service-level gain with the Amdahl bound. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

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
// cancels the context (runs flush and write their reports); a second exits at once.
func run(args []string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		fmt.Fprintln(os.Stderr, "transferlab: interrupt: stopping and keeping what was measured (interrupt again to exit now)")
		cancel()
		first := time.Now()
		for range sigs {
			// Tools such as timeout(1) deliver one interrupt twice within
			// microseconds (to the process, then to its group): that is one
			// request to stop, not an insistence to exit now.
			if time.Since(first) < doubleSignalWindow {
				continue
			}
			os.Exit(130)
		}
	}()

	root := newRootCmd()
	root.SetArgs(args)
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
	)
	return root
}
