package traces

import (
	"fmt"
	"strings"
	"time"
)

// MaxSkippedLines bounds Schedule.SkippedLines: a lenient read of a file
// with millions of bad rows names the first 1000 and counts the rest.
const MaxSkippedLines = 1000

// LineRanges renders sorted line numbers for people, runs joined:
// "lines 3-5, 9, 11-12"; when total exceeds len(lines) it adds
// "and N more". "" when there is none.
func LineRanges(lines []int, total int) string {
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("line")
	if total > 1 {
		b.WriteString("s")
	}
	for i := 0; i < len(lines); {
		j := i
		for j+1 < len(lines) && lines[j+1] == lines[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %d", lines[i])
		if j > i {
			fmt.Fprintf(&b, "-%d", lines[j])
		}
		i = j + 1
	}
	if more := total - len(lines); more > 0 {
		fmt.Fprintf(&b, " and %d more", more)
	}
	return b.String()
}

// RowsText accounts for every data row of a trace file in one line:
// "8 replayed of 11 read; 1 skipped as malformed (line 12); 2 dropped by
// policy (burstgpt_failed=2)". rows are the requests kept, read the data
// rows in the file (0 for a synthetic schedule: then only rows is said).
func RowsText(rows, read, skipped int, skippedLines []int, dropped map[string]int) string {
	if read == 0 {
		return fmt.Sprintf("%d requests", rows)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d replayed of %d read", rows, read)
	if skipped > 0 {
		fmt.Fprintf(&b, "; %d skipped as malformed (%s)", skipped, LineRanges(skippedLines, skipped))
	}
	if n := sumCounts(dropped); n > 0 {
		fmt.Fprintf(&b, "; %d dropped by policy%s", n, counts(dropped))
	}
	return b.String()
}

// RowsText is RowsText for s.
func (s Schedule) RowsText() string {
	return RowsText(len(s.Requests), s.RowsRead, s.Skipped, s.SkippedLines, s.Dropped)
}

// Backstep is where a trace's timestamps first go backwards.
type Backstep struct {
	// Line is the 1-based file line of the first row stamped earlier than
	// a row before it; AfterLine the line of the latest-stamped row before
	// it; By how much earlier.
	Line      int           `json:"line"`
	AfterLine int           `json:"after_line"`
	By        time.Duration `json:"by_ns"`
}

// OrderWarning says, for a trace whose timestamps go backwards, where they
// first do, how many rows were out of order and what the replay does with
// them (sorted by time, ties in file order); "" for a sorted trace. A trace
// concatenated from several files, or a wrong time column, shows here.
func (s Schedule) OrderWarning() string {
	b := s.FirstBackstep
	if s.Reordered == 0 || b == nil {
		return ""
	}
	rows := "rows"
	if s.Reordered == 1 {
		rows = "row"
	}
	return fmt.Sprintf("%s line %d: timestamps go backwards (%s earlier than line %d); %d %s out of time order in all, replayed sorted by arrival time (ties keep file order): check the time column, or sort the file to silence this",
		s.Source, b.Line, b.By, b.AfterLine, s.Reordered, rows)
}
