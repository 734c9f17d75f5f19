package amdahl

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// tritonRMSNormShapes is the per-shape table of the Triton RMSNorm's
// validation report on the H200 (results/validation-2026-11-29/
// validation-llama_rmsnorm_forward.json, captured set: count, original and
// candidate median µs by CUDA events), copied so this package's tests do not
// read another folder.
func tritonRMSNormShapes() []ShapeSpeedup {
	return []ShapeSpeedup{
		{"[1, 64, 4096] bfloat16", 1300, 73.85600358247757, 19.29599978029728},
		{"[1, 4096, 4096] bfloat16", 130, 235.9039932489395, 22.23999984562397},
		{"[1, 832, 4096] bfloat16", 130, 67.10399687290192, 19.13600042462349},
		{"[1, 8192, 4096] bfloat16", 130, 436.352014541626, 37.376001477241516},
		{"[1, 576, 4096] bfloat16", 130, 68.09599697589874, 19.61600035429001},
		{"[1, 128, 4096] bfloat16", 130, 65.63200056552887, 18.432000651955605},
		{"[1, 192, 4096] bfloat16", 130, 64.96000289916992, 17.72800087928772},
		{"[1, 640, 4096] bfloat16", 130, 66.97600334882736, 18.144000321626663},
		{"[1, 1536, 4096] bfloat16", 130, 98.49599748849869, 18.94400082528591},
	}
}

// TestH200BoundTable reproduces amdahl/H200.md: s of the Triton RMSNorm from
// its validation table, f of eager RMSNorm from the two real trace excerpts
// (concurrency 1 and 16; 4 windows each), and the bound with its bootstrap
// interval (seed 1, 2000 resamples). Point values are checked against the
// formula; the printed table is the evidence. Run with -v to see it.
func TestH200BoundTable(t *testing.T) {
	t.Parallel()
	rows := tritonRMSNormShapes()
	s, err := IsolatedSpeedupEstimate(rows)
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "s", float64(s.Value), 4.302, 5e-4)
	t.Logf("s = %.3f [%.3f, %.3f] over %d shapes", float64(s.Value), float64(s.Lo), float64(s.Hi), s.N)
	for _, c := range []struct {
		file  string
		fwall float64
		bound float64
	}{
		{"profile-c1-excerpt.json.gz", 0.0087, 1.0068},
		{"profile-c16-excerpt.json.gz", 0.0528, 1.0422},
	} {
		path := filepath.Join("testdata", "h200", c.file)
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s not committed", path)
		}
		sum, err := Summarize(context.Background(), path, FormatChrome,
			SummaryConfig{Windows: 4, Options: []Option{rmsnormEagerSequence()}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := BoundEstimate(sum.Windows, rows)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Bound(float64(sum.FWall.Value), float64(s.Value))
		approx(t, c.file+" bound", float64(b.Value), want, 1e-12)
		approx(t, c.file+" f_wall (4 digits, H200.md)", float64(sum.FWall.Value), c.fwall, 5e-5)
		approx(t, c.file+" bound (4 digits, H200.md)", float64(b.Value), c.bound, 5e-5)
		if !(b.Lo <= b.Value && b.Value <= b.Hi) {
			t.Errorf("%s: bound %v outside its interval [%v, %v]", c.file, b.Value, b.Lo, b.Hi)
		}
		t.Logf("%s: f_gpu %.4f, f_wall %.4f [%.4f, %.4f], bound %.4f [%.4f, %.4f]", c.file, float64(sum.Fractions.FGPU),
			float64(sum.FWall.Value), float64(sum.FWall.Lo), float64(sum.FWall.Hi), float64(b.Value), float64(b.Lo), float64(b.Hi))
	}
}
