package analysis_test

import (
	"context"
	"errors"
	"testing"

	"github.com/transferlab/transferlab/analysis"
)

func TestFindCapacity(t *testing.T) {
	t.Parallel()
	threshold := func(capRPS float64) analysis.Probe {
		return func(_ context.Context, l float64) (bool, error) { return l <= capRPS, nil }
	}
	cases := []struct {
		name       string
		capRPS     float64
		maxProbes  int
		pass, fail float64
		probes     int
	}{
		// [1, 33] at resolution 0.5: 2 end probes + ⌈log2(32/0.5)⌉ = 6 bisections.
		{"inside the range", 7.3, 0, 7, 7.5, 8},
		{"above the range", 100, 0, 33, 0, 2},
		{"below the range", 0.5, 0, 0, 1, 1},
		{"probe budget: 1 ok, 33, 17, 9 fail", 7.3, 4, 1, 9, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := analysis.FindCapacity(context.Background(), 1, 33, 0.5, tc.maxProbes, threshold(tc.capRPS))
			if err != nil {
				t.Fatal(err)
			}
			if b.PassRPS != tc.pass || b.FailRPS != tc.fail || len(b.Probes) != tc.probes {
				t.Errorf("bracket [%v, %v] after %d probes, want [%v, %v] after %d", b.PassRPS, b.FailRPS, len(b.Probes), tc.pass, tc.fail, tc.probes)
			}
			if tc.fail > 0 && tc.pass > 0 && tc.maxProbes == 0 && (tc.capRPS < b.PassRPS || tc.capRPS >= b.FailRPS || b.FailRPS-b.PassRPS > 0.5) {
				t.Errorf("bracket [%v, %v] does not hold capacity %v within 0.5", b.PassRPS, b.FailRPS, tc.capRPS)
			}
		})
	}
	boom := errors.New("server died")
	_, err := analysis.FindCapacity(context.Background(), 1, 33, 0.5, 0, func(_ context.Context, l float64) (bool, error) {
		if l > 20 {
			return false, boom
		}
		return true, nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("probe error: got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := analysis.FindCapacity(ctx, 1, 33, 0.5, 0, threshold(5)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
	if _, err := analysis.FindCapacity(context.Background(), 3, 2, 0.5, 0, threshold(5)); err == nil {
		t.Error("lo > hi: want error")
	}
}
