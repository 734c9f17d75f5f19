package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/traces"
)

// TestTraceStatsFirstBeyondRows: `trace stats --first N` with N above the
// trace's rows is refused as a config's trace.first is (traces.Trim),
// naming the flag, the rows asked and the rows there; N equal to the rows
// keeps them all.
func TestTraceStatsFirstBeyondRows(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "traces", "testdata", "azure_conv_50.csv")
	s, err := traces.ReadFile(file, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(s.Requests)
	if _, _, code, err := runCLI(t, "trace", "stats", file, "--first", fmt.Sprint(n)); code != 0 || err != nil {
		t.Errorf("--first %d (every row): exit %d: %v", n, code, err)
	}
	_, _, code, err := runCLI(t, "trace", "stats", file, "--first", fmt.Sprint(n+1))
	if want := fmt.Sprintf("--first: %d rows asked, but the trace has %d", n+1, n); code != 1 || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("--first %d: exit %d: %v, want a refusal containing %q", n+1, code, err, want)
	}
}

// TestTraceStatsBadFlags: each bad flag is refused by its own name, and a
// good flag beside it is not blamed.
func TestTraceStatsBadFlags(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "traces", "testdata", "azure_conv_50.csv")
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"--first", "-3"}, []string{"--first -3: must be ≥ 0"}, []string{"--clamp-context", "--rate"}},
		{[]string{"--clamp-context", "-1"}, []string{"--clamp-context -1: must be ≥ 0"}, []string{"--first", "--rate"}},
		{[]string{"--rate", "0"}, []string{"--rate 0: must be a positive"}, []string{"--first", "--clamp-context"}},
		{[]string{"--rate", "-2", "--first", "-1"}, []string{"--rate -2:", "--first -1:"}, []string{"--clamp-context"}},
		// The loader clamps below 2 to 2: a 1 given is refused, the rule said.
		{[]string{"--clamp-context", "1"}, []string{"--clamp-context 1: must be 0 (no clamp) or ≥ 2"}, []string{"--first", "--rate"}},
		{[]string{"--time-unit", "weird"}, []string{`--time-unit "weird": want one of s, ms, us, ns, datetime`}, []string{"--first", "--rate"}},
		// A mapping flag on a built-in format's file was ignored (--time-unit)
		// or answered in the loader's words ("mapping: missing column name(s)").
		{[]string{"--time-unit", "ms"}, []string{"--time-unit given without --time-col, --input-col, --output-col", "a built-in format"}, []string{"mapping:"}},
		{[]string{"--input-col", "foo"}, []string{"--input-col given without --time-col, --output-col: a column mapping"}, []string{"mapping:"}},
	} {
		_, _, code, err := runCLI(t, append([]string{"trace", "stats", file}, c.args...)...)
		if code != 1 || err == nil {
			t.Errorf("%v: exit %d, err %v: want a refusal", c.args, code, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v: want %q", c.args, err, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(err.Error(), n) {
				t.Errorf("%v: %v: names %s, which was not given wrong", c.args, err, n)
			}
		}
	}
}

// TestTraceStatsClampSaysOutputsCut: --clamp-context N keeps the loader's
// rule (a prompt cut to N − output, at least 1; an output that alone does
// not fit cut to N − 1) and says on stderr how many outputs it cut; a
// clamp that cuts only prompts says nothing.
func TestTraceStatsClampSaysOutputsCut(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "traces", "testdata", "azure_conv_50.csv")
	s, err := traces.ReadFile(file, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 10
	cut, maxOut := 0, 0
	for _, r := range s.Requests {
		if r.OutputTokens >= limit {
			cut++
		}
		maxOut = max(maxOut, r.OutputTokens)
	}
	if cut == 0 {
		t.Fatal("fixture has no output of 10 tokens or more")
	}
	_, stderr, code, err := runCLI(t, "trace", "stats", file, "--clamp-context", "10")
	if code != 0 || err != nil {
		t.Fatalf("exit %d, err %v", code, err)
	}
	if want := fmt.Sprintf("--clamp-context 10: %d request(s) whose output alone does not fit were cut to 1 prompt + 9 output tokens", cut); !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	// A context every output fits in cuts prompts only: nothing said.
	_, stderr, code, err = runCLI(t, "trace", "stats", file, "--clamp-context", strconv.Itoa(maxOut+2))
	if code != 0 || err != nil || strings.Contains(stderr, "output alone") {
		t.Errorf("clamp cutting prompts only: exit %d, err %v, stderr %q", code, err, stderr)
	}
}
