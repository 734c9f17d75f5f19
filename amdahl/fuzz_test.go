package amdahl

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/transferlab/transferlab/internal/fuzzing"
)

// FuzzParseChrome: any input either fails with an error or gives a profile
// whose fractions obey 0 ≤ f_excl ≤ f_wall and f_gpu ≤ 1 (no panics).
// Run with go test ./amdahl -fuzz FuzzParseChrome; plain go test runs the seeds.
func FuzzParseChrome(f *testing.F) {
	fuzzing.Budget(f)
	for _, name := range []string{"chrome_overlap.json", "chrome_annot.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`[{"ph":"X","cat":"kernel","name":"k","ts":"1.5","dur":2,"pid":0,"tid":"stream 7","args":{"correlation":"3"}}]`))
	re := regexp.MustCompile(`rms|k`)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseChrome(bytes.NewReader(data), "fuzz", KernelPattern(re))
		if err != nil {
			return
		}
		fr, err := p.Fractions()
		if err != nil {
			return
		}
		const eps = 1e-9
		if fr.FGPU.Defined() && fr.FGPU > 1+eps || fr.FExcl > fr.FWall+eps || fr.FExcl < 0 {
			t.Fatalf("f_gpu %v f_wall %v f_excl %v", fr.FGPU, fr.FWall, fr.FExcl)
		}
	})
}

// FuzzParseHookTimings: any input is rejected or passes every documented check.
func FuzzParseHookTimings(f *testing.F) {
	fuzzing.Budget(f)
	for _, name := range []string{"hook_small.json", "hook_graph.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHookTimings(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		if h.Calls != h.EagerCalls+h.CaptureCalls || h.TimedCalls > h.EagerCalls || h.GPUTimeMs < 0 {
			t.Fatalf("accepted inconsistent counts: %+v", h.HookCounts)
		}
	})
}
