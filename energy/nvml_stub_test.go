//go:build !(nvml && cgo && linux)

package energy

import (
	"errors"
	"strings"
	"testing"
)

// TestDefaultBuildWithoutNVML checks the default build: no NVML, and a
// sampler and a memory reading that say so and name the GPU build.
func TestDefaultBuildWithoutNVML(t *testing.T) {
	s := NewNVML(0)
	err := s.Start(t.Context(), 0)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Start in the default build: %v, want ErrUnavailable", err)
	}
	w, _ := s.Stop()
	for _, msg := range []string{err.Error(), w.UnavailableReason} {
		if !strings.Contains(msg, "energy: unavailable, built without NVML") || !strings.Contains(msg, "-tags nvml") {
			t.Errorf("reason %q: want %q and the GPU build command", msg, "energy: unavailable, built without NVML")
		}
	}
	if _, err := UsedMemory(0)(t.Context()); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "built without NVML") {
		t.Errorf("UsedMemory in the default build: %v", err)
	}
}
