package experiment

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/transferlab/transferlab/report"
)

// TestWriteReportsNotThroughLinks: WriteReports writes the results JSON under
// the name given, report.md and report.html, and replaces a symbolic link
// already at one of those paths instead of writing through it.
func TestWriteReportsNotThroughLinks(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cmp")
	outside := filepath.Join(t.TempDir(), "victim.md")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, MarkdownFile)); err != nil {
		t.Fatal(err)
	}
	r := report.Results{SchemaVersion: report.SchemaVersion, Complete: true, Cells: []report.Cell{}}
	if err := WriteReports(dir, "compare.json", r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"compare.json", MarkdownFile, HTMLFile} {
		st, err := os.Lstat(filepath.Join(dir, f))
		if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
			t.Errorf("%s: %v, mode %v: want a regular, non-empty file", f, err, st)
		}
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Errorf("the link's target was written: %q, %v", b, err)
	}
	if _, err := report.ReadResults(filepath.Join(dir, "compare.json")); err != nil {
		t.Errorf("compare.json does not read back: %v", err)
	}
}

// TestBuiltByGoRun: only the path `go run` builds into counts as built from
// the working folder; a binary built elsewhere (a device copy running in a
// stale checkout) does not read that checkout's commit.
func TestBuiltByGoRun(t *testing.T) {
	for exe, want := range map[string]bool{
		"/tmp/go-build2768151/b001/exe/transferlab":   true,
		"/var/tmp/go-build99/b001/exe/transferlab":    true,
		"/work/main/bin/transferlab":                  false,
		"/tmp/exe/transferlab":                        false,
		"/home/u/go-build-notes/b001/bin/transferlab": false,
		"/tmp/go-build2768151/b001/experiment.test":   false,
	} {
		if got := builtByGoRun(exe); got != want {
			t.Errorf("builtByGoRun(%q) = %v, want %v", exe, got, want)
		}
	}
}
