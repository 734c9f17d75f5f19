package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckOutDir: a folder holding files that are not a run's is refused
// naming them, unless overwrite; one holding a run is refused unless
// overwrite or resume; a missing, empty or run-only folder passes.
func TestCheckOutDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckOutDir(dir, false, false); err == nil || !strings.Contains(err.Error(), "notes.txt") || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("foreign file: %v, want a refusal naming notes.txt and --overwrite", err)
	}
	if err := CheckOutDir(dir, false, true); err == nil {
		t.Error("resume into a folder with a foreign file passed")
	}
	if err := CheckOutDir(dir, true, false); err != nil {
		t.Errorf("overwrite: %v", err)
	}
	// A file is no output folder, --overwrite or not.
	for _, overwrite := range []bool{false, true} {
		if err := CheckOutDir(filepath.Join(dir, "notes.txt"), overwrite, false); err == nil || !strings.Contains(err.Error(), "notes.txt is a file, not a folder") {
			t.Errorf("a file as the output folder (overwrite %v): %v", overwrite, err)
		}
	}
	run := t.TempDir()
	for _, f := range []string{"report.md", "results.json.tmp", LockFile} {
		if err := os.WriteFile(filepath.Join(run, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(run, ServersDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{run, t.TempDir(), filepath.Join(dir, "missing")} {
		if err := CheckOutDir(d, false, false); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if err := os.WriteFile(filepath.Join(run, ResultsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckOutDir(run, false, false); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Errorf("a run's folder: %v, want 'already holds a run'", err)
	}
	for _, resume := range []bool{true, false} {
		if err := CheckOutDir(run, !resume, resume); err != nil {
			t.Errorf("a run's folder with overwrite %t / resume %t: %v", !resume, resume, err)
		}
	}
}

// TestDefaultOutDir: runs/NAME-<UTC time>.
func TestDefaultOutDir(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 23, 5, 7, 0, time.FixedZone("CET", 3600))
	if got, want := DefaultOutDir("validation", at), filepath.Join("runs", "validation-20261129-220507"); got != want {
		t.Errorf("DefaultOutDir = %q, want %q (UTC)", got, want)
	}
}

// TestCheckReportsOut: a missing or empty folder passes; one holding any
// file is refused naming the folder, the file and --overwrite, unless
// overwrite.
func TestCheckReportsOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := CheckReportsOut(filepath.Join(dir, "new"), false); err != nil {
		t.Errorf("missing folder: %v", err)
	}
	if err := CheckReportsOut(dir, false); err != nil {
		t.Errorf("empty folder: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckReportsOut(dir, false); err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), MarkdownFile) || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("folder holding %s: %v, want refused naming it and --overwrite", MarkdownFile, err)
	}
	if err := CheckReportsOut(dir, true); err != nil {
		t.Errorf("overwrite: %v", err)
	}
	// Every refusal names the flag and the folder once, a file as a file.
	for _, overwrite := range []bool{false, true} {
		f := filepath.Join(dir, MarkdownFile)
		if err := CheckReportsOut(f, overwrite); err == nil || err.Error() != "--out "+f+" is a file, not a folder: give a new or empty folder for the reports" {
			t.Errorf("a file as the folder (overwrite %v): %v", overwrite, err)
		}
	}
	if err := CheckReportsOut(dir, false); err == nil || !strings.HasPrefix(err.Error(), "--out "+dir+": the folder already holds files") {
		t.Errorf("a folder holding files: %v, want it to begin with --out and the folder", err)
	}
}
