package amdahl

import (
	"fmt"
	"regexp"
	"strings"
)

// TargetPreset is a named kernel selection for profiles without a target
// range: CUDA-graph replays, or a server started without the hook's ranges.
// Exactly one of Pattern and Sequence is set; Options turns it into the
// KernelPattern or KernelSequence reader options.
type TargetPreset struct {
	// Name is what `transferlab profile --target NAME` accepts.
	Name string
	// Doc says which kernels it selects and where they come from.
	Doc string
	// Pattern is one regexp over kernel names (KernelPattern).
	Pattern string
	// Sequence holds one regexp per kernel of a call, in launch order
	// (KernelSequence).
	Sequence []string
}

// TargetPresets lists the shipped presets, in the order help prints them.
func TargetPresets() []TargetPreset {
	return []TargetPreset{
		{
			Name: "llama-rmsnorm",
			Doc:  "transformers' eager LlamaRMSNorm.forward, its 8 kernels in launch order (PyTorch 2.11, CUDA)",
			Sequence: []string{
				`direct_copy_kernel`,
				`pow_tensor_scalar`,
				`MeanOps`,
				`CUDAFunctorOnSelf_add<float>`,
				`rsqrt_kernel`,
				`BinaryFunctor<float, float, float, .*MulFunctor`,
				`bfloat16_copy_kernel`,
				`BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, .*MulFunctor`,
			},
		},
		{
			Name:    "triton-prefix",
			Doc:     "Triton kernels prefixed tl_, as in configs/kernels/rmsnorm_triton.py",
			Pattern: `^tl_`,
		},
	}
}

// LookupTargetPreset returns the preset called name.
func LookupTargetPreset(name string) (TargetPreset, bool) {
	for _, p := range TargetPresets() {
		if p.Name == name {
			return p, true
		}
	}
	return TargetPreset{}, false
}

// TargetPresetNames is the presets' names joined for help and errors:
// "llama-rmsnorm, triton-prefix".
func TargetPresetNames() string {
	var names []string
	for _, p := range TargetPresets() {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// Options returns the reader option that attributes the preset's kernels.
// A profile without target ranges whose kernels it attributes is labelled
// with the preset's name (Profile.Target), without the by-name-only warning.
func (p TargetPreset) Options() ([]Option, error) {
	opts, err := KernelNames(p.Pattern, p.Sequence)
	if err != nil {
		return nil, fmt.Errorf("amdahl: preset %s: %w", p.Name, err)
	}
	return []Option{func(c *attrConfig) {
		for _, o := range opts {
			o(c)
		}
		c.preset = p.Name
	}}, nil
}

// kernelNoise is what compactKernelName drops from a demangled kernel name:
// namespaces every ATen kernel shares, the argument array of elementwise
// kernels, lambdas and their call operators, and the TensorIterator argument
// of the launching functions.
var kernelNoise = regexp.MustCompile(`, std::array<char\*, \d+ul>|at::native::|binary_internal::|\(anonymous namespace\)::|c10::|std::|::\{lambda\([^)]*\)#\d+\}|::operator\(\)\(\) const|\(at::TensorIteratorBase&(, [a-z]+)?\)`)

// maxKernelName is the longest name compactKernelName returns, in runes.
const maxKernelName = 100

// compactKernelName shortens a demangled C++ kernel name for the console:
// no "void", no parameter list, no shared namespaces or lambdas, at most
// maxKernelName runes (cut with "…"). The full names are in the JSON
// summary (target_kernels).
func compactKernelName(name string) string {
	s := strings.TrimPrefix(name, "void ")
	s = s[:paramList(s)]
	s = kernelNoise.ReplaceAllString(s, "")
	if r := []rune(s); len(r) > maxKernelName {
		s = string(r[:maxKernelName-1]) + "…"
	}
	return s
}

// paramList returns the index of the "(" that opens s's parameter list (the
// first one outside template brackets), or len(s).
func paramList(s string) int {
	depth := 0
	for i, r := range s {
		switch {
		case r == '<':
			depth++
		case r == '>':
			depth--
		case r == '(' && depth == 0 && i > 0:
			return i
		}
	}
	return len(s)
}
