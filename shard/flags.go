package shard

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/report"
)

// Flags are the run command's flags for one shard of a run split over
// processes (--shard i/N and the flags that only go with it). AddFlags
// registers them; Run runs the experiment, as one shard when --shard was
// given.
type Flags struct {
	spec, startAt, clockRef string
	gap, clockTolerance     time.Duration
	fs                      *pflag.FlagSet
}

// shardOnly are the flags that mean something only with --shard.
var shardOnly = []string{"start-at", "cell-gap", "clock-ref", "clock-tolerance"}

// AddFlags registers --shard, --start-at, --cell-gap, --clock-ref and
// --clock-tolerance on fs.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.spec, "shard", "", "replay shard `i/N` of every cell's schedule (requests whose index mod N is i), to be merged by transferlab merge; needs --start-at and a server every shard reaches")
	fs.StringVar(&f.startAt, "start-at", "", "with --shard: the shared absolute start of the first cell (RFC 3339, e.g. 2026-12-01T22:00:00Z), the same on every shard")
	fs.DurationVar(&f.gap, "cell-gap", 0, "with --shard: time between one cell's last arrival and the next cell's shared start (default: request.timeout)")
	fs.StringVar(&f.clockRef, "clock-ref", "", "with --shard: NTP server (host:port) to estimate this shard's clock offset against (default: not measured)")
	fs.DurationVar(&f.clockTolerance, "clock-tolerance", DefaultClockTolerance, "with --shard: flag the shard when |clock offset| + its bound exceeds this")
}

// Sharded reports whether --shard was given.
func (f *Flags) Sharded() bool { return f.spec != "" }

// options checks the flags as given and returns the shard's Options; ok is
// false when --shard was not given (a flag that goes only with it is then
// an error naming it).
func (f *Flags) options() (o Options, ok bool, err error) {
	if f.spec == "" {
		for _, name := range shardOnly {
			if f.fs != nil && f.fs.Changed(name) {
				return o, false, fmt.Errorf("--%s: only with --shard", name)
			}
		}
		return o, false, nil
	}
	spec, err := ParseSpec(f.spec)
	if err != nil {
		return o, false, fmt.Errorf("--shard: %w", err)
	}
	if f.startAt == "" {
		return o, false, fmt.Errorf("--start-at: required with --shard (RFC 3339, the same on every shard)")
	}
	at, err := time.Parse(time.RFC3339Nano, f.startAt)
	if err != nil {
		return o, false, fmt.Errorf("--start-at %q: want RFC 3339 (e.g. 2026-12-01T22:00:00Z): %w", f.startAt, err)
	}
	return Options{Spec: spec, StartAt: at, Gap: f.gap, ClockRef: f.clockRef, ClockTolerance: f.clockTolerance}, true, nil
}

// Run runs cfg's experiment (experiment.Run), or its shard (Run) when
// --shard was given. A flag given without what it needs is an error naming
// it, before anything runs.
func (f *Flags) Run(ctx context.Context, cfg *experiment.Config, opt experiment.Options) (*report.Results, error) {
	so, ok, err := f.options()
	if err != nil {
		return nil, err
	}
	if !ok {
		return experiment.Run(ctx, cfg, opt)
	}
	return Run(ctx, cfg, opt, so)
}
