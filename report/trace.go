package report

import "github.com/transferlab/transferlab/traces"

// RowsText accounts for every data row of the trace file: replayed, read,
// skipped as malformed (which lines) and dropped by policy (which), as
// traces.RowsText words it.
func (t TraceInfo) RowsText() string {
	return traces.RowsText(t.Rows, t.RowsRead, t.Skipped, t.SkippedLines, t.Dropped)
}
