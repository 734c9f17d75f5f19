package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/clientbench"
)

// TestBenchClientCommand: bench-client's help gives the exit statuses of
// SIGINT and SIGTERM; a bad flag exits 1 naming it before anything runs; a
// clientbench.ExitError keeps its status through cobra, other errors exit 1.
func TestBenchClientCommand(t *testing.T) {
	t.Parallel()
	if long := newBenchClientCmd().Long; !strings.Contains(long, "exit 130 on SIGINT, 143 on\nSIGTERM") {
		t.Errorf("bench-client help does not give the exit statuses of SIGINT and SIGTERM:\n%s", long)
	}
	_, errOut, code, err := runCLI(t, "bench-client", "--rates", "0")
	if err == nil || code != 1 || !strings.Contains(err.Error(), "flag --rates: 0 req/s") || errOut != "" {
		t.Errorf("bench-client --rates 0: exit %d, err %v, stderr %q; want exit 1 naming the flag, nothing measured", code, err, errOut)
	}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{&clientbench.ExitError{Code: 2, Err: errors.New("incomplete")}, exitIncomplete},
		{&clientbench.ExitError{Code: 143, Err: errors.New("interrupted by SIGTERM")}, 143},
	} {
		var ee *exitError
		if got := benchClientExit(tc.err); !errors.As(got, &ee) || ee.code != tc.want || got.Error() != tc.err.Error() {
			t.Errorf("benchClientExit(%v) = %v, want exit %d with the same text", tc.err, got, tc.want)
		}
	}
	if got := benchClientExit(errors.New("bad")); errors.As(got, new(*exitError)) {
		t.Errorf("a plain error got an exit status: %v", got)
	}
}
