package traces

import (
	"errors"
	"fmt"
)

// ErrUnknownFormat is returned (wrapped) when a trace's header matches no known
// format, when a forced format name is unknown, or when the header matches
// several formats at once. Callers branch on it to ask the user for --format
// or a column Mapping.
var ErrUnknownFormat = errors.New("unknown trace format")

// Reasons a row is rejected; they key Schedule.SkippedByReason in lenient mode.
const (
	ReasonFieldCount = "field_count" // the row has a different number of fields than the header
	ReasonBadTime    = "bad_time"    // the timestamp does not parse or overflows
	ReasonBadTokens  = "bad_tokens"  // a token count is not a non-negative integer
	ReasonZeroTokens = "zero_tokens" // an input or output token count is 0 (a request needs ≥ 1 of each)
	ReasonBadJSON    = "bad_json"    // a JSONL line is not one JSON object
	ReasonBadPrefix  = "bad_prefix"  // the prefix column (hash_ids) is malformed
	ReasonBlankLine  = "blank_line"  // a CSV line between the header and the last row is blank
)

// RowError is a bad row: it names the file, the 1-based line and the field
// (column name as written in the header) and wraps the underlying cause.
type RowError struct {
	File   string // path or name given to the reader
	Line   int    // 1-based line number in the file (the CSV header is line 1)
	Field  string // column name as written in the header; "" for whole-row problems
	Reason string // one of the Reason* constants
	Err    error  // the cause
}

// Error formats as "traces: FILE line N field "F": cause".
func (e *RowError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("traces: %s line %d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("traces: %s line %d field %q: %v", e.File, e.Line, e.Field, e.Err)
}

// Unwrap returns the cause.
func (e *RowError) Unwrap() error { return e.Err }
