package interrupt

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestWatchCause checks that the work's cancellation cause names the signal
// (it becomes results.json's incomplete_reason), that a repeat within Window
// is ignored and that a later one exits with 128 + the signal number.
func TestWatchCause(t *testing.T) {
	cases := []struct {
		sig  os.Signal
		want string
		code int
	}{
		{os.Interrupt, "interrupted by SIGINT", 130},
		{syscall.SIGTERM, "interrupted by SIGTERM", 143},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			sigs := make(chan os.Signal, 2)
			exited := make(chan int, 1)
			var stderr bytes.Buffer
			done := make(chan struct{})
			go func() {
				defer close(done)
				Watch(sigs, cancel, "stopping", &stderr, func(code int) { exited <- code })
			}()
			sigs <- tc.sig
			sigs <- tc.sig // the duplicate timeout(1) sends: ignored
			<-ctx.Done()
			if got := context.Cause(ctx); got == nil || got.Error() != tc.want {
				t.Fatalf("cause = %v, want %q", got, tc.want)
			}
			var ie Error
			if !errors.As(context.Cause(ctx), &ie) || ie.Sig != tc.sig {
				t.Errorf("cause %#v is not Error{%v}", context.Cause(ctx), tc.sig)
			}
			time.Sleep(Window + 50*time.Millisecond)
			select {
			case c := <-exited:
				t.Fatalf("exited %d on the duplicate signal", c)
			default:
			}
			sigs <- tc.sig
			if c := <-exited; c != tc.code {
				t.Errorf("exit status = %d, want %d", c, tc.code)
			}
			<-done
			if !strings.Contains(stderr.String(), Name(tc.sig)) {
				t.Errorf("stderr = %q, want the signal named", stderr.String())
			}
		})
	}
}

// TestNotifyStop: stop ends the watching goroutine without cancelling the
// work.
func TestNotifyStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := Notify(cancel, "stopping", &bytes.Buffer{}, func(int) { t.Error("exited without a signal") })
	stop()
	if ctx.Err() != nil {
		t.Errorf("stop cancelled the work: %v", context.Cause(ctx))
	}
}

// TestStatus: one scheme for work that stopped early: 130/143 for a signal,
// the caller's own status otherwise (a deadline, a server that died).
func TestStatus(t *testing.T) {
	const otherwise = 2
	for _, tc := range []struct {
		cause error
		want  int
	}{
		{Error{os.Interrupt}, 130},
		{Error{syscall.SIGTERM}, 143},
		{errors.New("the run deadline (--deadline 1s) passed"), otherwise},
		{nil, otherwise},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		if tc.cause != nil {
			cancel(tc.cause)
		}
		if got := Status(ctx, otherwise); got != tc.want {
			t.Errorf("Status(cause %v) = %d, want %d", tc.cause, got, tc.want)
		}
		cancel(nil)
	}
}
