package amdahl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestH200Profiles reads every real profile the GPU helper committed under
// testdata/h200/ and checks what must hold of any profile: it parses, f's
// are fractions in order (0 ≤ f_excl ≤ f_wall ≤ 1, f_gpu ≤ 1, target ≤ busy),
// and the pooled f lies inside its interval. File-specific answers are in
// TestH200Known. A trace with no target range needs a kernel pattern, so
// ErrNoAttribution is reported, not failed.
func TestH200Profiles(t *testing.T) {
	t.Parallel()
	files := h200Files(t)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			format, err := DetectFormat(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Summarize(context.Background(), path, format, SummaryConfig{})
			if errors.Is(err, ErrNoAttribution) {
				t.Skipf("%s: %v (needs a kernel pattern; see TestH200Known)", path, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, s)
		})
	}
}

func h200Files(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", "h200"))
	if err != nil || len(entries) == 0 {
		t.Skip("no real H200 profiles under amdahl/testdata/h200/ yet (the GPU helper commits them)")
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.Contains(n, ".window.json") || !(strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".json.gz") || strings.HasSuffix(n, ".sqlite")) {
			continue
		}
		out = append(out, filepath.Join("testdata", "h200", n))
	}
	if len(out) == 0 {
		t.Skip("no profile files under amdahl/testdata/h200/")
	}
	return out
}

func checkInvariants(t *testing.T, s Summary) {
	t.Helper()
	fr := s.Fractions
	const eps = 1e-12
	if fr.TargetGPU < 0 || (fr.Busy > 0 && fr.TargetGPU > fr.Busy) {
		t.Errorf("target %v, busy %v", fr.TargetGPU, fr.Busy)
	}
	if !fr.FWall.Defined() || fr.FWall < 0 || fr.FWall > 1+eps {
		t.Errorf("f_wall %v not a fraction", fr.FWall)
	}
	if fr.FGPU.Defined() && (fr.FGPU < 0 || fr.FGPU > 1+eps) {
		t.Errorf("f_gpu %v not a fraction", fr.FGPU)
	}
	if fr.FExcl.Defined() && (fr.FExcl < 0 || fr.FExcl > fr.FWall+eps) {
		t.Errorf("f_excl %v not in [0, f_wall %v]", fr.FExcl, fr.FWall)
	}
	if e := s.FWall; !(e.Lo <= e.Value+eps && e.Value <= e.Hi+eps) {
		t.Errorf("pooled f_wall %v outside its interval [%v, %v]", e.Value, e.Lo, e.Hi)
	}
}
