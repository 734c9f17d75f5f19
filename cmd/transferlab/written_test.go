package main

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/transferlab/transferlab/experiment"
)

// TestPrintWrittenNamesFailedFiles: after a full disk the console names the
// files written and, apart, those not written.
func TestPrintWrittenNamesFailedFiles(t *testing.T) {
	t.Parallel()
	runErr := fmt.Errorf("run: %w", errors.Join(errors.New("cell stopped"),
		&experiment.FileError{File: experiment.HTMLFile, Err: syscall.ENOSPC},
		&experiment.FileError{File: experiment.ResultsFile, Err: syscall.ENOSPC}))
	var b strings.Builder
	printWritten(&b, "out", runErr)
	want := "\nwritten to out: records.jsonl, report.md\nNOT written whole in out: results.json, report.html (see the error below)\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	printWritten(&b, "out", nil)
	if want := "\nwritten to out: records.jsonl, results.json, report.md, report.html\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
