package energy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"
)

// ErrUnavailable means no energy source could be read (no NVIDIA driver, no
// such device, binary built without NVML: the default build). The Window then has Available=false
// and says why; reports print "unavailable", never 0 J.
var ErrUnavailable = errors.New("energy: unavailable")

// Sampler covers one measured window. Start takes the first sample and starts
// sampling every period (0 means DefaultPeriod); Stop takes the last sample,
// stops the goroutine and returns the Window. A Sampler may be reused for
// another window after Stop.
//
// When no source is available Start returns an error wrapping ErrUnavailable;
// a caller that carries on without energy still calls Stop, which returns the
// unavailable Window and the same error. Any other Start error (bad options,
// bad power model, cancelled idle measurement) leaves nothing to Stop.
type Sampler interface {
	Start(ctx context.Context, period time.Duration) error
	Stop() (Window, error)
}

// Defaults of the options.
const (
	// DefaultPeriod is the sampling period when Start is given 0.
	DefaultPeriod = 50 * time.Millisecond
	// DefaultCounterUpdatePeriod is how often the energy counter advances:
	// about every 100 ms on the H200 (/work/shared/NOTES-gpu.md).
	DefaultCounterUpdatePeriod = 100 * time.Millisecond
	// DefaultMaxDisagreementPct is the |counter − power integral| / counter
	// above which a window is flagged.
	DefaultMaxDisagreementPct = 10.0
	// DefaultMinSteadyWindow is the window length below which counter
	// quantisation may exceed 1 % (100 ms / 30 s ≈ 0.3 %; ML.ENERGY uses ≥ 30 s).
	DefaultMinSteadyWindow = 30 * time.Second
	// MinPeriod is the shortest sampling period accepted.
	MinPeriod = time.Millisecond
)

// config holds every option with its default filled in.
type config struct {
	pids                []int
	idle                time.Duration
	counterUpdatePeriod time.Duration
	maxDisagreementPct  float64
	minSteadyWindow     time.Duration
	log                 *slog.Logger
	keepSamples         bool
	simVRAM             func() uint64
}

func newConfig(opts []Option) config {
	c := config{
		counterUpdatePeriod: DefaultCounterUpdatePeriod,
		maxDisagreementPct:  DefaultMaxDisagreementPct,
		minSteadyWindow:     DefaultMinSteadyWindow,
		log:                 slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// validate checks the options; Start returns its error.
func (c config) validate() error {
	var errs []error
	if c.idle < 0 {
		errs = append(errs, fmt.Errorf("WithIdlePower: %v is negative", c.idle))
	}
	if c.counterUpdatePeriod < 0 {
		errs = append(errs, fmt.Errorf("WithCounterUpdatePeriod: %v is negative", c.counterUpdatePeriod))
	}
	if !(c.maxDisagreementPct > 0) {
		errs = append(errs, fmt.Errorf("WithMaxDisagreement: %v %% must be > 0", c.maxDisagreementPct))
	}
	if c.minSteadyWindow < 0 {
		errs = append(errs, fmt.Errorf("WithMinSteadyWindow: %v is negative", c.minSteadyWindow))
	}
	for _, p := range c.pids {
		if p <= 0 || p > math.MaxUint32 {
			errs = append(errs, fmt.Errorf("WithPIDs: %d is not a process id", p))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("energy: options: %w", err)
	}
	return nil
}

// Option changes a Sampler setting.
type Option func(*config)

// WithPIDs names the server's processes whose VRAM is attributed as process
// VRAM (summed over NVML's compute-process list). Default: none, so process
// VRAM is not reported. NVML lists host PIDs: inside a PID namespace they may
// not match, and the Window then warns.
func WithPIDs(pids ...int) Option {
	return func(c *config) { c.pids = append([]int(nil), pids...) }
}

// WithIdlePower makes Start first sample power for d and report the mean as
// IdlePowerW (the GPU should be idle then). Start blocks for d. Default 0: not measured.
func WithIdlePower(d time.Duration) Option { return func(c *config) { c.idle = d } }

// WithCounterUpdatePeriod sets how often the energy counter advances
// (default DefaultCounterUpdatePeriod, 100 ms; about 10 ms on some other GPUs).
// A window shorter than it has its counter energy refused.
func WithCounterUpdatePeriod(d time.Duration) Option {
	return func(c *config) { c.counterUpdatePeriod = d }
}

// WithMaxDisagreement sets the counter-vs-integral disagreement (percent)
// above which the window is flagged. Default DefaultMaxDisagreementPct (10 %).
func WithMaxDisagreement(pct float64) Option {
	return func(c *config) { c.maxDisagreementPct = pct }
}

// WithMinSteadyWindow sets the window length below which a quantisation
// warning is given. Default DefaultMinSteadyWindow (30 s).
func WithMinSteadyWindow(d time.Duration) Option {
	return func(c *config) { c.minSteadyWindow = d }
}

// WithLogger logs what the sampler read (device, power source, first and
// last readings, summary). Default: no logging.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithSamples keeps every raw Sample in Window.Samples (for evidence files).
// Default false.
func WithSamples(keep bool) Option { return func(c *config) { c.keepSamples = keep } }

// WithSimulatedVRAM gives the simulated sampler a reading of the simulated
// server's VRAM in bytes. Without it simulated VRAM is reported unavailable.
// NVML samplers ignore it.
func WithSimulatedVRAM(f func() uint64) Option { return func(c *config) { c.simVRAM = f } }

// probe is one source of samples: an NVML device or the power model.
// open and close are called from Start and Stop; take is called from one
// goroutine at a time.
type probe interface {
	// open prepares the source; an error wrapping ErrUnavailable means there
	// is none.
	open() (sourceInfo, error)
	// take reads one sample at offset at from the window's start.
	take(at time.Duration) Sample
	close() error
}

// sourceInfo is what a probe tells the analysis about itself.
type sourceInfo struct {
	source      string // SourceNVML or SourceSimulated
	label       string
	device      DeviceInfo
	powerSource string
	// powerIsIntervalMean: each power reading is the mean over the interval
	// since the previous sample (integrate as rectangles, not trapezoids).
	powerIsIntervalMean bool
	// counterUpdatePeriod overrides the option when > 0 or marks a
	// resolution-free counter when < 0.
	counterUpdatePeriod time.Duration
	powerLimitW         *float64
}

// runner drives a probe over one window. It implements Sampler.
type runner struct {
	cfg   config
	probe probe

	mu          sync.Mutex
	started     bool
	unavailable error
	info        sourceInfo
	// start is when the first sample was taken (wall and monotonic clock).
	start      time.Time
	period     time.Duration
	idlePowerW *float64
	samples    []Sample
	stopEarly  string
	stop       chan struct{}
	done       chan struct{}
}

var _ Sampler = (*runner)(nil)

// Start implements Sampler.
func (r *runner) Start(ctx context.Context, period time.Duration) error {
	if period == 0 {
		period = DefaultPeriod
	}
	if period < MinPeriod {
		return fmt.Errorf("energy: Start: period %v is shorter than the minimum %v", period, MinPeriod)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("energy: Start called twice without Stop")
	}
	r.started = true
	r.unavailable = nil
	r.samples = nil
	r.idlePowerW = nil
	r.stopEarly = ""
	r.period = period
	if err := r.cfg.validate(); err != nil {
		r.started = false
		return err
	}
	info, err := r.probe.open()
	if err != nil && !errors.Is(err, ErrUnavailable) {
		r.started = false // a configuration error: nothing to Stop
		return err
	}
	if err != nil {
		r.unavailable = err
		r.info = info
		r.cfg.log.Warn("energy: telemetry unavailable", "source", info.source, "reason", err.Error())
		return err
	}
	r.info = info
	r.cfg.log.Info("energy: sampler opened", "source", info.source, "device", info.device.Name,
		"uuid", info.device.UUID, "driver", info.device.DriverVersion, "power_source", info.powerSource,
		"period", period)
	if r.cfg.idle > 0 {
		if err := r.measureIdle(ctx, period); err != nil {
			_ = r.probe.close()
			r.started = false
			return err
		}
	}
	r.start = time.Now()
	first := r.probe.take(0)
	r.samples = append(r.samples, first)
	r.cfg.log.Info("energy: first sample", "sample", first)
	r.stop = make(chan struct{})
	r.done = make(chan struct{})
	go r.loop(ctx, period)
	return nil
}

// measureIdle samples power for cfg.idle before the window and stores the mean.
func (r *runner) measureIdle(ctx context.Context, period time.Duration) error {
	t0 := time.Now()
	var sum float64
	var n int
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		s := r.probe.take(time.Since(t0))
		if s.ok(fieldPower) {
			sum += s.PowerW
			n++
		}
		if time.Since(t0) >= r.cfg.idle {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("energy: idle power measurement: %w", ctx.Err())
		case <-tick.C:
		}
	}
	if n > 0 {
		m := sum / float64(n)
		r.idlePowerW = &m
		r.cfg.log.Info("energy: idle power before the window", "idle_power_w", m, "samples", n, "over", r.cfg.idle)
	}
	return nil
}

func (r *runner) loop(ctx context.Context, period time.Duration) {
	defer close(r.done)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-ctx.Done():
			r.mu.Lock()
			r.stopEarly = fmt.Sprintf("sampling stopped early at %.3f s: %v", time.Since(r.start).Seconds(), ctx.Err())
			r.mu.Unlock()
			return
		case <-tick.C:
			s := r.probe.take(time.Since(r.start))
			r.cfg.log.Debug("energy: sample", "sample", s)
			r.mu.Lock()
			r.samples = append(r.samples, s)
			r.mu.Unlock()
		}
	}
}

// Stop implements Sampler.
func (r *runner) Stop() (Window, error) {
	r.mu.Lock()
	if !r.started {
		r.mu.Unlock()
		return Window{}, errors.New("energy: Stop called without a successful Start")
	}
	if r.unavailable != nil {
		r.started = false
		w := unavailableWindow(r.info, r.unavailable)
		r.mu.Unlock()
		return w, r.unavailable
	}
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = false
	endMono := time.Now()
	last := r.probe.take(endMono.Sub(r.start))
	r.samples = append(r.samples, last)
	r.cfg.log.Info("energy: last sample", "sample", last)
	closeErr := r.probe.close()
	in := analysisInput{
		info:       r.info,
		cfg:        r.cfg,
		start:      r.start,
		end:        endMono,
		period:     r.period,
		idlePowerW: r.idlePowerW,
	}
	w := analyse(r.samples, in)
	if r.stopEarly != "" {
		w.Warnings = append(w.Warnings, r.stopEarly)
	}
	if closeErr != nil {
		w.Warnings = append(w.Warnings, "closing the source: "+closeErr.Error())
	}
	r.cfg.log.Info("energy: window", "summary", w.Summary())
	return w, nil
}

// unavailableWindow is the Window of a source that could not be opened.
func unavailableWindow(info sourceInfo, err error) Window {
	return Window{
		Source:            info.source,
		Label:             info.label,
		Device:            info.device,
		Available:         false,
		UnavailableReason: err.Error(),
		EnergyHeadline:    HeadlineNone,
	}
}
