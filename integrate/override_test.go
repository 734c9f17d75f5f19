package integrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture writes a candidate, a captured set and a validation report made for them.
type fixture struct {
	dir, candidate, captured, report string
	ov                               Override
}

func newFixture(t *testing.T, edit func(r map[string]any)) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{dir: dir, candidate: filepath.Join(dir, "k.py"), captured: filepath.Join(dir, "captured.json"),
		report: filepath.Join(dir, "validation.json")}
	must(t, os.WriteFile(f.candidate, []byte("def fwd(self, x):\n    return x\n"), 0o644))
	must(t, os.WriteFile(f.captured, []byte(`{"format":"transferlab.captured_shapes/v1","shapes":[]}`), 0o644))
	ksum, _ := FileSHA256(f.candidate)
	csum, _ := FileSHA256(f.captured)
	r := map[string]any{"format": ValidationFormat, "target": "m:C.forward", "candidate": f.candidate + ":fwd",
		"candidate_sha256": ksum, "captured_file": f.captured, "captured_sha256": csum, "verdict": "pass",
		"reason": "every gate passed", "speedup": map[string]any{"s": 2.5}}
	if edit != nil {
		edit(r)
	}
	b, _ := json.Marshal(r)
	must(t, os.WriteFile(f.report, b, 0o644))
	f.ov = Override{Target: "m:C.forward", Candidate: f.candidate + ":fwd", ValidationReport: f.report,
		CapturedShapes: f.captured}
	return f
}

// writeKernel writes a trivial candidate file k.py (function f) into dir.
func writeKernel(t *testing.T, dir string) string {
	t.Helper()
	k := filepath.Join(dir, "k.py")
	must(t, os.WriteFile(k, []byte("def f(self,x): return x\n"), 0o644))
	return k
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestCheckValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		edit     func(r map[string]any)         // changes the report
		change   func(t *testing.T, f *fixture) // changes the world after the report
		want     error
		wantText string
	}{
		{name: "passing report", want: nil},
		{name: "no report named", change: func(_ *testing.T, f *fixture) { f.ov.ValidationReport = "" },
			want: ErrValidationMissing, wantText: "validation_report is not set"},
		{name: "report file absent", change: func(_ *testing.T, f *fixture) { must(t, os.Remove(f.report)) },
			want: ErrValidationMissing, wantText: "does not exist"},
		{name: "failing verdict", edit: func(r map[string]any) {
			r["verdict"], r["reason"] = "fail", "gate all_written failed on the captured set"
		}, want: ErrValidationFailing, wantText: "all_written"},
		{name: "kernel edited after validation", change: func(t *testing.T, f *fixture) {
			must(t, os.WriteFile(f.candidate, []byte("def fwd(self, x):\n    return x * 0\n"), 0o644))
		}, want: ErrValidationStale, wantText: "kernel file sha256"},
		{name: "shapes captured again", change: func(t *testing.T, f *fixture) {
			must(t, os.WriteFile(f.captured, []byte(`{"format":"transferlab.captured_shapes/v1","shapes":[1]}`), 0o644))
		}, want: ErrValidationStale, wantText: "captured shape set"},
		{name: "another target", edit: func(r map[string]any) { r["target"] = "m:Other.forward" },
			want: ErrValidationStale, wantText: "made for target"},
		{name: "another function of the same file", edit: func(r map[string]any) {
			r["candidate"] = "/x/k.py:other"
		}, want: ErrValidationStale, wantText: "function \"fwd\""},
		{name: "stale beats failing", edit: func(r map[string]any) {
			r["verdict"], r["candidate_sha256"] = "fail", strings.Repeat("0", 64)
		}, want: ErrValidationStale},
		{name: "mode off needs no report", change: func(_ *testing.T, f *fixture) {
			f.ov.Mode, f.ov.ValidationReport = ModeOff, ""
		}, want: nil},
		{name: "mode capture needs no report", change: func(_ *testing.T, f *fixture) {
			f.ov.Mode, f.ov.ValidationReport = ModeCapture, ""
		}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tc.edit)
			if tc.change != nil {
				tc.change(t, &f)
			}
			rep, err := CheckValidation(f.ov)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if f.ov.EffectiveMode() == ModeOn && (rep == nil || rep.Speedup.S == nil || *rep.Speedup.S != 2.5) {
					t.Errorf("report not returned with s: %+v", rep)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("err %q does not say %q", err, tc.wantText)
			}
			if !strings.Contains(err.Error(), "transferlab validate") && !errors.Is(err, ErrValidationFailing) {
				t.Errorf("err does not say how to fix it: %v", err)
			}
		})
	}
}

func TestReadValidationReportRejectsMalformed(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"not json":     `{"format":`,
		"wrong format": `{"format":"x","verdict":"pass","target":"t","candidate_sha256":"` + strings.Repeat("a", 64) + `"}`,
		"bad verdict": `{"format":"` + ValidationFormat + `","verdict":"maybe","target":"t","candidate_sha256":"` +
			strings.Repeat("a", 64) + `"}`,
		"no hash": `{"format":"` + ValidationFormat + `","verdict":"pass","target":"t"}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "r.json")
			must(t, os.WriteFile(p, []byte(body), 0o644))
			if _, err := ReadValidationReport(p); err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want an error naming %s", err, p)
			}
		})
	}
}

func TestOverrideValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := writeKernel(t, dir)
	cases := []struct {
		name string
		ov   Override
		want []string // substrings; empty = valid
	}{
		{"method target", Override{Target: "a.b:C.forward", Candidate: k + ":f"}, nil},
		{"op target", Override{Target: "aten::rms_norm", Candidate: k + ":f", Module: "torch"}, nil},
		{"relative candidate with base dir", Override{Target: "a:C.f", Candidate: "k.py:f", BaseDir: dir}, nil},
		{"off without candidate", Override{Target: "a:C.f", Mode: ModeOff}, nil},
		{"everything wrong at once", Override{Target: "a.b.C.forward", Candidate: "k.py", Mode: "always",
			ShadowCalls: -1}, []string{"override.target", "override.mode", "override.candidate", "override.shadow_calls"}},
		{"missing file", Override{Target: "a:C.f", Candidate: filepath.Join(dir, "nope.py") + ":f"},
			[]string{"not a readable file"}},
		{"module on a method target", Override{Target: "a:C.f", Candidate: k + ":f", Module: "x"},
			[]string{"override.module"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.ov.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("err = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestWriteHookManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := writeKernel(t, dir)
	p := filepath.Join(dir, "m.json")
	must(t, WriteHookManifest(p, filepath.Join(dir, "hook"), Override{Target: "a:C.f", Candidate: "k.py:f",
		BaseDir: dir, KernelPrefix: "tl_"}))
	var m hookManifest
	b, _ := os.ReadFile(p)
	must(t, json.Unmarshal(b, &m))
	sum, _ := FileSHA256(k)
	o := m.Overrides[0]
	if m.Version != 1 || o.Mode != ModeOn || o.ShadowCalls != DefaultShadowCalls || o.CandidateSHA256 != sum ||
		o.Candidate != k+":f" || o.Name != "f" || o.KernelPrefix != "tl_" {
		t.Errorf("manifest = %+v", m)
	}
	if err := WriteHookManifest(p, dir, Override{Target: "bad"}); err == nil {
		t.Error("invalid override accepted")
	}
}

func TestCandidateRan(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		o    OverrideStats
		want bool
		text string
	}{
		{"graph captured", OverrideStats{Mode: ModeOn, Installed: true, Calls: map[string]int{"eager": 65, "capture": 65},
			ServedBy: map[string]int{"candidate": 130}}, true, "65 during CUDA-graph capture"},
		{"compiled away", OverrideStats{Mode: ModeOn, Installed: true, Calls: map[string]int{"compiling": 3},
			ServedBy: map[string]int{}}, false, "torch.compile"},
		{"never called", OverrideStats{Mode: ModeOn, Installed: true}, false, "never called"},
		{"not installed", OverrideStats{Mode: ModeOn, InstallError: "no method"}, false, "no method"},
		{"shadow", OverrideStats{Mode: ModeShadow, Installed: true}, false, "mode shadow"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, why := tc.o.CandidateRan()
			if got != tc.want || !strings.Contains(why, tc.text) {
				t.Errorf("CandidateRan = %v, %q", got, why)
			}
		})
	}
}

func TestReadValidationReportCompactsSignatures(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(r map[string]any) {
		r["shapes"] = []any{map[string]any{"set": "captured", "count": 3,
			"signature": []any{map[string]any{"shape": []int{1, 64, 4096}, "dtype": "bfloat16"}}}}
	})
	b, _ := os.ReadFile(f.report)
	var pretty bytes.Buffer
	must(t, json.Indent(&pretty, b, "", "  "))
	must(t, os.WriteFile(f.report, pretty.Bytes(), 0o644))
	rep, err := ReadValidationReport(f.report)
	must(t, err)
	if got := string(rep.Shapes[0].Signature); got != `[{"dtype":"bfloat16","shape":[1,64,4096]}]` {
		t.Errorf("signature = %s", got)
	}
}
