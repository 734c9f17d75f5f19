package shard

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestFlagsOptions: --shard's companions are refused without it, --shard
// needs --start-at in RFC 3339, and a complete set gives the shard's
// Options.
func TestFlagsOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		ok   bool
		err  string
	}{
		{nil, false, ""},
		{[]string{"--cell-gap", "1s"}, false, "--cell-gap: only with --shard"},
		{[]string{"--clock-ref", "ntp:123"}, false, "--clock-ref: only with --shard"},
		{[]string{"--shard", "1/3"}, false, "--start-at: required"},
		{[]string{"--shard", "3/3", "--start-at", "2026-12-01T22:00:00Z"}, false, "--shard"},
		{[]string{"--shard", "1/3", "--start-at", "tomorrow"}, false, `--start-at "tomorrow": want RFC 3339`},
		{[]string{"--shard", "1/3", "--start-at", "2026-12-01T22:00:00Z", "--cell-gap", "2s"}, true, ""},
	}
	for _, tc := range cases {
		var f Flags
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		f.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		o, ok, err := f.options()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || ok != tc.ok {
			t.Errorf("%v: ok %v, error %v; want ok %v", tc.args, ok, err, tc.ok)
			continue
		}
		if ok && (o.Spec != (Spec{Index: 1, Count: 3}) || !o.StartAt.Equal(time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)) || o.Gap != 2*time.Second || o.ClockTolerance != DefaultClockTolerance) {
			t.Errorf("%v: options %+v", tc.args, o)
		}
		if f.Sharded() != (tc.ok) {
			t.Errorf("%v: Sharded() = %v", tc.args, f.Sharded())
		}
	}
}
