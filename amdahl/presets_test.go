package amdahl

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTargetPresetsCompile: every preset gives exactly one reader option, and
// names are unique.
func TestTargetPresetsCompile(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, p := range TargetPresets() {
		if seen[p.Name] || p.Name == "" || p.Doc == "" {
			t.Errorf("preset %+v: empty or duplicate name, or no doc", p)
		}
		seen[p.Name] = true
		if (p.Pattern == "") == (len(p.Sequence) == 0) {
			t.Errorf("preset %s: want exactly one of Pattern and Sequence", p.Name)
		}
		if opts, err := p.Options(); err != nil || len(opts) != 1 {
			t.Errorf("preset %s: options %d, %v", p.Name, len(opts), err)
		}
		if q, ok := LookupTargetPreset(p.Name); !ok || q.Name != p.Name {
			t.Errorf("LookupTargetPreset(%q) = %v, %v", p.Name, q, ok)
		}
		if !strings.Contains(TargetPresetNames(), p.Name) {
			t.Errorf("TargetPresetNames() = %q lacks %s", TargetPresetNames(), p.Name)
		}
	}
	if _, ok := LookupTargetPreset("transferlab::target"); ok {
		t.Error("a range name is a preset")
	}
}

// TestCompactKernelName shortens real demangled ATen and Triton kernel names
// from the H200 traces.
func TestCompactKernelName(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul> >(int, at::native::CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul>)",
			"vectorized_elementwise_kernel<4, CUDAFunctorOnSelf_add<float> >"},
		{"void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)",
			"vectorized_elementwise_kernel<4, rsqrt_kernel_cuda >"},
		{"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, std::array<char*, 2ul>)",
			"vectorized_elementwise_kernel<4, pow_tensor_scalar_kernel_impl<float, float> >"},
		{"tl_rmsnorm_fwd", "tl_rmsnorm_fwd"},
	}
	for _, c := range cases {
		if got := compactKernelName(c.in); got != c.want {
			t.Errorf("compactKernelName(%.60q…) = %q, want %q", c.in, got, c.want)
		}
	}
	long := "void " + strings.Repeat("k<int>::", 40) + "f(int)"
	if got := compactKernelName(long); utf8.RuneCountInString(got) != maxKernelName || !strings.HasSuffix(got, "…") {
		t.Errorf("long name: %q (%d runes), want %d runes ending in …", got, utf8.RuneCountInString(got), maxKernelName)
	}
}

// TestKernelNames: a pattern and a sequence each add one option, nothing adds
// none, and an expression that does not compile is named with its step.
func TestKernelNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		pattern  string
		sequence []string
		want     int
		wantErr  string
	}{
		{"none", "", nil, 0, ""},
		{"pattern", "rms", nil, 1, ""},
		{"sequence", "", []string{"copy", "pow"}, 1, ""},
		{"both", "rms", []string{"copy"}, 2, ""},
		{"bad pattern", "(", nil, 0, "kernel pattern: "},
		{"bad step", "", []string{"copy", "pow("}, 0, `kernel sequence step 2 ("pow(")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := KernelNames(tc.pattern, tc.sequence)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(opts) != tc.want {
				t.Fatalf("KernelNames = %d options, %v; want %d", len(opts), err, tc.want)
			}
			var c attrConfig
			for _, o := range opts {
				o(&c)
			}
			if (c.pattern != nil) != (tc.pattern != "") || len(c.sequence) != len(tc.sequence) {
				t.Errorf("options set pattern %v, sequence %v", c.pattern, c.sequence)
			}
		})
	}
}
