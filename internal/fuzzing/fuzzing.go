// Package fuzzing holds what transferlab's fuzz targets share.
package fuzzing

import (
	"flag"
	"testing"
	"time"
)

// MinimizeTime is how long the fuzzer may spend minimising one input when
// the command line does not say (-fuzzminimizetime).
const MinimizeTime = 5 * time.Second

// Budget caps minimisation at MinimizeTime unless -fuzzminimizetime was
// given. Go's default is 60 s for every input that finds new coverage as
// well as for a failing one: on a loaded 2-core machine minimising one input
// of a few KB took most of a 60 s run (FuzzSSEReader: 5 new inputs in 60 s,
// 117 with 2 s), so a short run explored almost nothing. Call it first in a
// fuzz target; it changes nothing when not fuzzing.
func Budget(f *testing.F) {
	f.Helper()
	fl := flag.Lookup("test.fuzzminimizetime")
	if fl == nil {
		return
	}
	set := false
	flag.Visit(func(v *flag.Flag) { set = set || v == fl })
	if !set {
		if err := fl.Value.Set(MinimizeTime.String()); err != nil {
			f.Fatalf("setting -test.fuzzminimizetime: %v", err)
		}
	}
}
