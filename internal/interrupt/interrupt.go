// Package interrupt is how transferlab's commands stop on SIGINT and SIGTERM.
// The first signal cancels the work's context with a cause naming it (Error,
// "interrupted by SIGINT": runs flush, write their reports and give that as
// the incomplete reason); a second one exits at once with the shell's status
// for death by that signal (ExitCode: 128 + its number, 130 for SIGINT, 143
// for SIGTERM). It knows no command and nothing of what is measured.
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Window is how soon a repeated signal counts as the same one: tools such as
// timeout(1) deliver one interrupt twice within microseconds (to the
// process, then to its group).
const Window = 500 * time.Millisecond

// Error is the work's cancellation cause when a signal stopped it; its text
// is what results.json's incomplete_reason and the console give.
type Error struct{ Sig os.Signal }

func (e Error) Error() string { return "interrupted by " + Name(e.Sig) }

// Name is the conventional name of the signals the commands handle.
func Name(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// ExitCode is the shell's status for death by sig: 128 + its number (130
// for anything that is not a syscall.Signal).
func ExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// Status is the exit status of work that stopped before its end under ctx:
// ExitCode of the signal when one stopped it (ctx's cause is an Error), else
// otherwise (a deadline, a server that died: the caller's own status).
func Status(ctx context.Context, otherwise int) int {
	var e Error
	if errors.As(context.Cause(ctx), &e) {
		return ExitCode(e.Sig)
	}
	return otherwise
}

// Notify watches SIGINT and SIGTERM for the rest of the process (Watch)
// until stop is called.
func Notify(cancel context.CancelCauseFunc, note string, stderr io.Writer, exit func(int)) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go Watch(sigs, cancel, note, stderr, exit)
	return func() {
		signal.Stop(sigs)
		close(sigs)
	}
}

// Watch cancels with cause Error on the first signal from sigs, printing
// note (what stopping does), and calls exit(ExitCode) on a later one, unless
// it comes within Window of the first. It returns when sigs is closed.
func Watch(sigs <-chan os.Signal, cancel context.CancelCauseFunc, note string, stderr io.Writer, exit func(int)) {
	sig, ok := <-sigs
	if !ok {
		return
	}
	fmt.Fprintf(stderr, "transferlab: %s: %s (interrupt again to exit now)\n", Name(sig), note)
	cancel(Error{sig})
	first := time.Now()
	for range sigs {
		if time.Since(first) < Window {
			continue
		}
		exit(ExitCode(sig))
		return
	}
}
