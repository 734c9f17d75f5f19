package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CellKey names one arm × offered load × repetition.
type CellKey struct {
	Arm            string  `json:"arm"`
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	Repetition     int     `json:"repetition"`
}

// RunOrder is the interleaved order to run arms × loads × reps in (DESIGN.md,
// "Arms, interleaving, statistics"): repetitions outermost, then loads, and
// within each (rep, load) block every arm once, forwards in even blocks and
// backwards in odd ones, so two arms run A B B A A B … and clock, thermal and
// neighbour drift hit all arms alike. The index in the result is Cell.Order.
func RunOrder(arms []string, loadsRPS []float64, reps int) ([]CellKey, error) {
	if len(arms) == 0 || len(loadsRPS) == 0 || reps < 1 {
		return nil, fmt.Errorf("report: RunOrder: need ≥ 1 arm, load and repetition (got %d arms, %d loads, %d reps)", len(arms), len(loadsRPS), reps)
	}
	seen := map[string]bool{}
	for _, a := range arms {
		if a == "" || seen[a] {
			return nil, fmt.Errorf("report: RunOrder: arm names must be non-empty and distinct (%q)", a)
		}
		seen[a] = true
	}
	out := make([]CellKey, 0, len(arms)*len(loadsRPS)*reps)
	block := 0
	for r := range reps {
		for _, l := range loadsRPS {
			for i := range arms {
				a := arms[i]
				if block%2 == 1 {
					a = arms[len(arms)-1-i]
				}
				out = append(out, CellKey{Arm: a, OfferedLoadRPS: l, Repetition: r})
			}
			block++
		}
	}
	return out, nil
}

// CellsNotRun lists the planned cells (r.RunOrder) that have no entry in
// r.Cells, in run order: what an incomplete run (deadline, interrupt, server
// death) never started. Nil when every planned cell ran or nothing was planned.
func CellsNotRun(r Results) []CellKey {
	ran := make(map[CellKey]bool, len(r.Cells))
	for _, c := range r.Cells {
		ran[CellKey{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition}] = true
	}
	var out []CellKey
	for _, k := range r.RunOrder {
		if !ran[k] {
			out = append(out, k)
		}
	}
	return out
}

// cellsCutShort lists the cells that started but did not run to their end
// (Cell.Incomplete), in run order.
func CellsCutShort(r Results) []CellKey {
	var out []CellKey
	for _, c := range r.Cells {
		if c.Incomplete != "" {
			out = append(out, CellKey{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition})
		}
	}
	return out
}

// String names the cell as the reports do: "arm at 3 req/s, rep 0".
func (k CellKey) String() string {
	return fmt.Sprintf("%s at %s req/s, rep %d", k.Arm, Num(k.OfferedLoadRPS), k.Repetition)
}

// keysText joins cell names with "; ".
func KeysText(ks []CellKey) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = k.String()
	}
	return strings.Join(s, "; ")
}

// armOrder lists arms in first-appearance order (manifest order first, then
// the planned run order, then the cells).
func ArmOrder(r Results) []string {
	var out []string
	seen := map[string]bool{}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, a := range r.Manifest.ArmOrder {
		add(a)
	}
	for _, k := range r.RunOrder { // planned arms count even when none of their cells ran
		add(k.Arm)
	}
	for _, c := range r.Cells {
		add(c.Arm)
	}
	return out
}

// sortedCells returns r.Cells ordered by arm (armOrder), load, repetition.
func SortedCells(r Results) []Cell {
	rank := map[string]int{}
	for i, a := range ArmOrder(r) {
		rank[a] = i
	}
	cells := slices.Clone(r.Cells)
	slices.SortStableFunc(cells, func(a, b Cell) int {
		return cmp.Or(cmp.Compare(rank[a.Arm], rank[b.Arm]), cmp.Compare(a.OfferedLoadRPS, b.OfferedLoadRPS), cmp.Compare(a.Repetition, b.Repetition))
	})
	return cells
}

func LoadsOf(r Results) []float64 {
	set := map[float64]bool{}
	for _, c := range r.Cells {
		set[c.OfferedLoadRPS] = true
	}
	return slices.Sorted(maps.Keys(set))
}
