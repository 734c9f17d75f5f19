package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/transferlab/transferlab/experiment"
)

// TestPrintWrittenNamesWhatWasWritten: the console names the files the run
// wrote, read from the folder (cells.jsonl and the servers folder
// included, a file an earlier run left not), and, apart, those not written
// whole after a full disk.
func TestPrintWrittenNamesWhatWasWritten(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	start := time.Now()
	for _, f := range []string{experiment.RecordsFile, experiment.CellsFile, experiment.MarkdownFile, experiment.ResultsFile, "servers/baseline/server.log", "shard.json", experiment.LockFile} {
		p := filepath.Join(out, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// report.html left by an earlier run in this (overwritten) folder.
	old := filepath.Join(out, experiment.HTMLFile)
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(old, start.Add(-time.Hour), start.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printWritten(&b, out, start, nil)
	if want := "\nwritten to " + out + ": records.jsonl, results.json, report.md, cells.jsonl, servers/, shard.json\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}

	runErr := fmt.Errorf("run: %w", errors.Join(errors.New("cell stopped"),
		&experiment.FileError{File: experiment.MarkdownFile, Err: syscall.ENOSPC},
		&experiment.FileError{File: experiment.ResultsFile, Err: syscall.ENOSPC}))
	b.Reset()
	printWritten(&b, out, start, runErr)
	want := "\nwritten to " + out + ": records.jsonl, cells.jsonl, servers/, shard.json\nNOT written whole in " + out + ": results.json, report.md (see the error below)\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
