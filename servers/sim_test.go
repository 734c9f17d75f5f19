package servers

import (
	"context"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/sim"
)

// TestSimProfileWithoutTarget: a run with no amdahl.target_op profiles no
// op (as an endpoint or a command server gives none): Profile says nothing,
// where it warned in every cell that the simulator has no op ""; a target
// the simulator does not model is still an error.
func TestSimProfileWithoutTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		target, wantErr string
		wantProfile     bool
	}{{"", "", false}, {"rmsnorm", "", true}, {"rmsnrom", `the simulator has no op "rmsnrom"`, false}} {
		s, err := StartSim(ctx, sim.DefaultConfig(), tc.target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ResetProfile(ctx); err != nil {
			t.Fatal(err)
		}
		fr, err := s.Profile(ctx, report.CellKey{Arm: "baseline", OfferedLoadRPS: 1}, nil)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) || (fr != nil) != tc.wantProfile {
			t.Errorf("target %q: profile %v, error %v; want a profile %v, error %q", tc.target, fr, err, tc.wantProfile, tc.wantErr)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
