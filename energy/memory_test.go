package energy

import (
	"context"
	"errors"
	"testing"
)

// TestUsedMemory reads VRAM through the device surface, closes it, and
// reports a missing driver as unavailable (never 0 bytes).
func TestUsedMemory(t *testing.T) {
	f := &fakeDevice{t: t, used: func(int) (uint64, error) { return 12 << 30, nil }}
	got, err := usedMemory(context.Background(), 0, func(int) (device, error) { return f, nil })
	if err != nil || got != 12<<30 {
		t.Fatalf("usedMemory = %d, %v; want %d", got, err, uint64(12<<30))
	}
	if !f.closed {
		t.Error("device not closed after the reading")
	}

	noDriver := func(int) (device, error) { return nil, ErrUnavailable }
	if _, err := usedMemory(context.Background(), 0, noDriver); !errors.Is(err, ErrUnavailable) {
		t.Errorf("no driver: err = %v, want ErrUnavailable", err)
	}

	f2 := &fakeDevice{t: t, used: func(int) (uint64, error) { return 0, errFakeNotSupported }}
	if _, err := usedMemory(context.Background(), 0, func(int) (device, error) { return f2, nil }); err == nil || !f2.closed {
		t.Errorf("unsupported reading: err = %v, closed = %v; want an error and a closed device", err, f2.closed)
	}
}
