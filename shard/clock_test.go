package shard

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"testing"
	"time"
)

// ntpServer answers SNTP requests on a loopback UDP port with a clock
// skewed by skew (its time = ours + skew); it stops with the test.
func ntpServer(t *testing.T, skew time.Duration) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < 48 {
				continue
			}
			recv := time.Now().Add(skew)
			var resp [48]byte
			resp[0] = 0x24 // LI 0, version 4, mode 4 (server)
			resp[1] = 1    // stratum 1
			copy(resp[24:32], buf[40:48])
			binary.BigEndian.PutUint64(resp[32:], toNTP(recv))
			binary.BigEndian.PutUint64(resp[40:], toNTP(time.Now().Add(skew)))
			_, _ = pc.WriteTo(resp[:], addr)
		}
	}()
	return pc.LocalAddr().String()
}

func TestMeasureClock(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{0, 250 * time.Millisecond, -40 * time.Millisecond} {
		ref := ntpServer(t, skew)
		c, err := MeasureClock(context.Background(), ref, 8, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		// Our clock minus the reference's is −skew, within the estimate's own bound
		// (and the NTP timestamp's resolution).
		want := -ms(skew)
		if math.Abs(c.OffsetMs-want) > c.BoundMs+0.001 {
			t.Errorf("skew %s: offset %.4f ms ± %.4f ms, want %.4f ms", skew, c.OffsetMs, c.BoundMs, want)
		}
		if c.Exchanges < 1 || c.Exchanges > 8 {
			t.Errorf("skew %s: %d exchanges answered, want 1 to 8", skew, c.Exchanges)
		}
		if flagged := math.Abs(c.OffsetMs)+c.BoundMs > 10; c.Flagged != flagged {
			t.Errorf("skew %s: flagged %v with offset %.3f ms ± %.3f ms and tolerance 10 ms", skew, c.Flagged, c.OffsetMs, c.BoundMs)
		}
		if skew == 250*time.Millisecond && !c.Flagged {
			t.Errorf("a clock 250 ms off was not flagged against a 10 ms tolerance")
		}
	}
}

func TestMeasureClockNoReference(t *testing.T) {
	t.Parallel()
	c, err := MeasureClock(context.Background(), "", 8, time.Millisecond)
	if err != nil || c.NotMeasured == "" || c.Offset() != 0 || c.Flagged {
		t.Fatalf("no reference: %+v, %v; want not measured, offset 0, not flagged", c, err)
	}
	// A port that answers nothing is an error, not a silent zero.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := MeasureClock(context.Background(), pc.LocalAddr().String(), 2, time.Millisecond); err == nil {
		t.Fatal("a silent reference gave no error")
	}
}

func TestNTPTimestampRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 22, 0, 0, 123456789, time.UTC)
	if got := fromNTP(toNTP(at)); got.Sub(at).Abs() > time.Nanosecond {
		t.Fatalf("round trip %s → %s", at, got)
	}
}
