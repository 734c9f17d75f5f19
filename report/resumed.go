package report

import "fmt"

// ResumedText is the reports' one-line note on a resumed run ("" when the
// run was not resumed).
func ResumedText(r Results) string {
	if !r.Resumed || r.ResumedFrom == nil {
		return ""
	}
	f := r.ResumedFrom
	at := ""
	if n := len(r.ResumedAt); n > 0 {
		at = " at " + r.ResumedAt[n-1].UTC().Format("2006-01-02T15:04:05Z")
		if n > 1 {
			at += fmt.Sprintf(" (its resumption %d)", n)
		}
	}
	return fmt.Sprintf("resumed (run --resume)%s: %d cells kept from the interrupted run created %s (stopped: %s), %d run by this one; each cell's start time is in the table below. Kept cells' energy figures are those computed when they ended (the window trimmed to their measured window).",
		at, f.KeptCells, f.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), OrText(f.IncompleteReason, "no reason recorded"), f.RerunCells)
}

// CellStartRows are the rows (order, arm, load, repetition, started at UTC,
// measured by) of a resumed run's cell start table.
func CellStartRows(r Results) [][]string {
	rows := make([][]string, 0, len(r.Cells))
	for _, c := range r.Cells {
		at := "—"
		if c.StartedAt != nil {
			at = c.StartedAt.UTC().Format("2006-01-02T15:04:05.000Z")
		}
		by := "this run"
		if c.Kept {
			by = "interrupted run (kept)"
		}
		rows = append(rows, []string{fmt.Sprint(c.Order + 1), c.Arm, fmt.Sprintf("%g", c.OfferedLoadRPS), fmt.Sprint(c.Repetition), at, by})
	}
	return rows
}
