package integrate

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// UsedMemoryFunc reads the GPU memory in use, in bytes.
type UsedMemoryFunc func(ctx context.Context) (uint64, error)

// IdleOption changes WaitGPUIdle's defaults.
type IdleOption func(*idleConfig)

type idleConfig struct {
	// slack is how far above the baseline used memory may stay and still
	// count as idle (512 MiB: driver and context bookkeeping move by tens of MiB).
	slack   uint64
	timeout time.Duration
	poll    time.Duration
}

// IdleTimeout bounds the wait (default 60 s).
func IdleTimeout(d time.Duration) IdleOption { return func(c *idleConfig) { c.timeout = d } }

// IdlePoll is the polling period (default 500 ms).
func IdlePoll(d time.Duration) IdleOption { return func(c *idleConfig) { c.poll = d } }

// ErrGPUNotIdle reports that GPU memory did not fall back to its idle level.
var ErrGPUNotIdle = errors.New("GPU memory did not return to idle")

// WaitGPUIdle polls used until it reads at most baseline+slack bytes, and
// returns the last reading. Call it between arms with the baseline read before
// the first server started, so one arm's leftovers cannot shrink the next arm's
// memory. It fails with ErrGPUNotIdle (naming both numbers) after the timeout.
func WaitGPUIdle(ctx context.Context, used UsedMemoryFunc, baseline uint64, opts ...IdleOption) (uint64, error) {
	c := idleConfig{slack: 512 << 20, timeout: 60 * time.Second, poll: 500 * time.Millisecond}
	for _, o := range opts {
		o(&c)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	t := time.NewTicker(c.poll)
	defer t.Stop()
	var last uint64
	var lastErr error
	for {
		v, err := used(ctx)
		if err == nil {
			last, lastErr = v, nil
			if v <= baseline+c.slack {
				return v, nil
			}
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return last, fmt.Errorf("integrate: waiting for GPU idle: %w (last read error: %v)", ErrGPUNotIdle, lastErr)
			}
			return last, fmt.Errorf("integrate: %w: %d MiB used, idle baseline %d MiB + slack %d MiB, after %v",
				ErrGPUNotIdle, last>>20, baseline>>20, c.slack>>20, c.timeout)
		case <-t.C:
		}
	}
}

// NvidiaSMIUsed returns a UsedMemoryFunc that reads device index's used memory
// with nvidia-smi (memory.used, MiB). Prefer an NVML reader where one is wired.
func NvidiaSMIUsed(index int) UsedMemoryFunc {
	return func(ctx context.Context) (uint64, error) {
		out, err := exec.CommandContext(ctx, "nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
			"-i", strconv.Itoa(index)).Output()
		if err != nil {
			return 0, fmt.Errorf("nvidia-smi: %w", err)
		}
		return parseSMIMiB(string(out))
	}
}

func parseSMIMiB(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("nvidia-smi memory.used: %q: %w", s, err)
	}
	return v << 20, nil
}
