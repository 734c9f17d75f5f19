package shard

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"time"
)

// Clock is a shard's wall-clock offset against a reference clock, measured
// before it starts, as AIPerf does for its workers: several SNTP exchanges
// (RFC 5905's on-wire protocol) with an NTP server, keeping the one with the
// smallest round-trip delay (the minimum filter: the exchange least disturbed
// by queueing). Its error is bounded by half that delay.
type Clock struct {
	// Reference is the NTP server (host:port); "" when none was given.
	Reference string `json:"reference,omitempty"`
	// NotMeasured says why there is no estimate ("" when there is one).
	NotMeasured string `json:"not_measured,omitempty"`
	// Exchanges is how many exchanges were answered.
	Exchanges int `json:"exchanges,omitempty"`
	// OffsetMs is this shard's clock minus the reference, ms (positive: this
	// shard's clock is ahead). Subtracting it puts its times on the
	// reference clock.
	OffsetMs float64 `json:"offset_ms"`
	// BoundMs bounds |OffsetMs − true offset|: half the kept exchange's
	// round-trip delay, ms.
	BoundMs float64 `json:"bound_ms"`
	// DelayMs is the kept exchange's round-trip delay, ms.
	DelayMs float64 `json:"delay_ms"`
	// ToleranceMs is the largest |offset| + bound accepted, ms.
	ToleranceMs float64 `json:"tolerance_ms"`
	// Flagged is true when |OffsetMs| + BoundMs > ToleranceMs: this shard's
	// times cannot be trusted to the tolerance (merge warns).
	Flagged bool `json:"flagged"`
	// MeasuredAt is when the estimate was taken (this shard's clock).
	MeasuredAt time.Time `json:"measured_at"`
}

// Offset is OffsetMs as a duration (0 when not measured).
func (c Clock) Offset() time.Duration {
	return time.Duration(math.Round(c.OffsetMs * float64(time.Millisecond)))
}

// ntpEpochOffset is the seconds from 1900-01-01 (NTP era 0) to 1970-01-01.
const ntpEpochOffset = 2208988800

// toNTP encodes t as a 64-bit NTP timestamp (32.32 fixed point seconds since 1900).
func toNTP(t time.Time) uint64 {
	ns := t.UnixNano()
	sec := uint64(ns/1e9) + ntpEpochOffset
	frac := (uint64(ns%1e9) << 32) / 1e9
	return sec<<32 | frac
}

// fromNTP decodes a 64-bit NTP timestamp (era 0).
func fromNTP(v uint64) time.Time {
	sec := int64(v>>32) - ntpEpochOffset
	nsec := int64(((v & 0xffffffff) * 1e9) >> 32)
	return time.Unix(sec, nsec)
}

// MeasureClock estimates this machine's clock offset against the NTP server
// ref (host:port, e.g. "time.example.internal:123") from `exchanges` SNTP
// exchanges (≥ 1), each given up to 1 s. ref "" gives a Clock that says it was
// not measured. An unreachable reference or no answer is an error.
func MeasureClock(ctx context.Context, ref string, exchanges int, tolerance time.Duration) (Clock, error) {
	c := Clock{Reference: ref, ToleranceMs: ms(tolerance)}
	if ref == "" {
		c.NotMeasured = "no clock reference given (--clock-ref): offset assumed 0, unbounded"
		return c, nil
	}
	if exchanges < 1 {
		return c, fmt.Errorf("clock reference %s: %d exchanges: want ≥ 1", ref, exchanges)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", ref)
	if err != nil {
		return c, fmt.Errorf("clock reference %s: %w", ref, err)
	}
	defer conn.Close()
	best := time.Duration(math.MaxInt64)
	var lastErr error
	for range exchanges {
		if ctx.Err() != nil {
			return c, context.Cause(ctx)
		}
		off, delay, err := exchange(conn)
		if err != nil {
			lastErr = err
			continue
		}
		c.Exchanges++
		if delay < best {
			best = delay
			c.OffsetMs, c.DelayMs, c.BoundMs = ms(off), ms(delay), ms(delay)/2
		}
	}
	if c.Exchanges == 0 {
		return c, fmt.Errorf("clock reference %s: no answer to %d SNTP exchanges: %w", ref, exchanges, lastErr)
	}
	c.MeasuredAt = time.Now().UTC()
	c.Flagged = math.Abs(c.OffsetMs)+c.BoundMs > c.ToleranceMs
	return c, nil
}

// exchange does one SNTP exchange and returns the local clock minus the
// server's (offset) and the round-trip delay without the server's own time.
func exchange(conn net.Conn) (offset, delay time.Duration, err error) {
	var req [48]byte
	req[0] = 0x23 // LI 0, version 4, mode 3 (client)
	t0 := time.Now()
	binary.BigEndian.PutUint64(req[40:], toNTP(t0))
	if err := conn.SetDeadline(t0.Add(time.Second)); err != nil {
		return 0, 0, err
	}
	if _, err := conn.Write(req[:]); err != nil {
		return 0, 0, err
	}
	// A reply to an earlier exchange that timed out may arrive first: skip
	// replies that do not echo this request, until the deadline.
	var resp [48]byte
	var t3 time.Time
	for {
		n, err := conn.Read(resp[:])
		t3 = time.Now()
		if err != nil {
			return 0, 0, err
		}
		if n < 48 || resp[0]&0x7 != 4 {
			return 0, 0, errors.New("not an SNTP server reply (mode 4, 48 bytes)")
		}
		if binary.BigEndian.Uint64(resp[24:]) == binary.BigEndian.Uint64(req[40:]) {
			break
		}
	}
	if resp[1] == 0 {
		return 0, 0, errors.New("SNTP reply is a kiss-o'-death (stratum 0)")
	}
	t1 := fromNTP(binary.BigEndian.Uint64(resp[32:]))
	t2 := fromNTP(binary.BigEndian.Uint64(resp[40:]))
	// RFC 5905 §8: θ = ((t1 − t0) + (t2 − t3)) / 2 is server − client;
	// δ = (t3 − t0) − (t2 − t1). t3 − t0 is taken on the monotonic clock.
	theta := (t1.Sub(t0) + t2.Sub(t3.Round(0))) / 2
	return -theta, t3.Sub(t0) - t2.Sub(t1), nil
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
