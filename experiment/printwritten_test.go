package experiment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPrintWrittenNamesWhatWasWritten: run's console names the files the run
// recorded as written (cells.jsonl and the servers folder included), not
// what the folder holds: a file another process put there during the run,
// or one an earlier run left, is not named; apart, those not written whole
// after a full disk.
func TestPrintWrittenNamesWhatWasWritten(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	for _, f := range []string{HTMLFile, "notes.txt", LockFile} {
		if err := os.WriteFile(filepath.Join(out, f), []byte("not this run's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := &Written{}
	for _, f := range []string{RecordsFile, CellsFile, "servers/", MarkdownFile, ResultsFile, "shard.json", CellsFile} {
		w.Add(f)
	}
	var b strings.Builder
	PrintWritten(&b, out, w, nil)
	if want := "\nwritten to " + out + ": records.jsonl, results.json, report.md, cells.jsonl, servers/, shard.json\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}

	runErr := fmt.Errorf("run: %w", errors.Join(errors.New("cell stopped"),
		&FileError{File: MarkdownFile, Err: syscall.ENOSPC},
		&FileError{File: ResultsFile, Err: syscall.ENOSPC}))
	b.Reset()
	PrintWritten(&b, out, w, runErr)
	want := "\nwritten to " + out + ": records.jsonl, cells.jsonl, servers/, shard.json\nNOT written whole in " + out + ": results.json, report.md (see the error below)\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
