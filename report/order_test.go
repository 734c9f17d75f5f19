package report

import (
	"fmt"
	"strings"
	"testing"
)

func TestRunOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		arms  []string
		loads []float64
		reps  int
		want  string // arm@load/rep, space separated
	}{
		{"two arms: A B B A", []string{"A", "B"}, []float64{1}, 2, "A@1/0 B@1/0 B@1/1 A@1/1"},
		{"loads inside repetitions", []string{"A", "B"}, []float64{1, 8}, 2, "A@1/0 B@1/0 B@8/0 A@8/0 A@1/1 B@1/1 B@8/1 A@8/1"},
		{"three arms mirror", []string{"A", "B", "C"}, []float64{1}, 2, "A@1/0 B@1/0 C@1/0 C@1/1 B@1/1 A@1/1"},
		{"one arm", []string{"A"}, []float64{1, 2}, 1, "A@1/0 A@2/0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RunOrder(tc.arms, tc.loads, tc.reps)
			if err != nil {
				t.Fatal(err)
			}
			parts := make([]string, len(got))
			for i, k := range got {
				parts[i] = fmt.Sprintf("%s@%g/%d", k.Arm, k.OfferedLoadRPS, k.Repetition)
			}
			if s := strings.Join(parts, " "); s != tc.want {
				t.Errorf("order %s, want %s", s, tc.want)
			}
		})
	}
	// Balance: over an even number of blocks every arm's mean position in its block is the same.
	order, _ := RunOrder([]string{"A", "B", "C"}, []float64{1, 2, 4}, 4)
	pos := map[string]int{}
	for i, k := range order {
		pos[k.Arm] += i % 3
	}
	if pos["A"] != pos["B"] || pos["B"] != pos["C"] {
		t.Errorf("positions not balanced: %v", pos)
	}
	for _, bad := range []struct {
		arms  []string
		loads []float64
		reps  int
	}{{nil, []float64{1}, 1}, {[]string{"A"}, nil, 1}, {[]string{"A"}, []float64{1}, 0}, {[]string{"A", "A"}, []float64{1}, 1}, {[]string{""}, []float64{1}, 1}} {
		if _, err := RunOrder(bad.arms, bad.loads, bad.reps); err == nil {
			t.Errorf("RunOrder(%v, %v, %d): want error", bad.arms, bad.loads, bad.reps)
		}
	}
}
