package main

import (
	"fmt"
	"path/filepath"
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
