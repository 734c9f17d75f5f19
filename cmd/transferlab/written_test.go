package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/transferlab/transferlab/experiment"
)

// TestPrintWrittenNamesWhatWasWritten: the console names the files the run
// recorded as written (cells.jsonl and the servers folder included), not
// what the folder holds: a file another process put there during the run,
// or one an earlier run left, is not named; apart, those not written whole
// after a full disk.
func TestPrintWrittenNamesWhatWasWritten(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	for _, f := range []string{experiment.HTMLFile, "notes.txt", experiment.LockFile} {
		if err := os.WriteFile(filepath.Join(out, f), []byte("not this run's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := &experiment.Written{}
	for _, f := range []string{experiment.RecordsFile, experiment.CellsFile, "servers/", experiment.MarkdownFile, experiment.ResultsFile, "shard.json", experiment.CellsFile} {
		w.Add(f)
	}
	var b strings.Builder
	printWritten(&b, out, w, nil)
	if want := "\nwritten to " + out + ": records.jsonl, results.json, report.md, cells.jsonl, servers/, shard.json\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}

	runErr := fmt.Errorf("run: %w", errors.Join(errors.New("cell stopped"),
		&experiment.FileError{File: experiment.MarkdownFile, Err: syscall.ENOSPC},
		&experiment.FileError{File: experiment.ResultsFile, Err: syscall.ENOSPC}))
	b.Reset()
	printWritten(&b, out, w, runErr)
	want := "\nwritten to " + out + ": records.jsonl, cells.jsonl, servers/, shard.json\nNOT written whole in " + out + ": results.json, report.md (see the error below)\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
