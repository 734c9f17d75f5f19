package experiment

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/internal/outpath"
	"github.com/transferlab/transferlab/render"
	"github.com/transferlab/transferlab/report"
)

// addCell summarises one measured cell into the results, with its warning
// when too many of its requests did not end ok (analysis.FailureWarning).
func (r *runner) addCell(m measured) {
	c := analysis.BuildCell(m.records, analysis.CellOptions{
		Arm:            m.key.arm,
		OfferedLoadRPS: r.cfg.Load.RatesRPS[m.key.load],
		Repetition:     m.key.rep,
		Order:          len(r.res.Cells),
		RecordsFile:    RecordsFile,
		SLO:            r.res.SLO,
	})
	if !m.summary.Start.IsZero() {
		at := m.summary.Start.UTC()
		c.StartedAt = &at
	}
	if !m.summary.Complete {
		c.Incomplete = m.summary.IncompleteReason
		if c.Incomplete == "" {
			c.Incomplete = "the cell did not run to its end"
		}
	}
	r.res.Cells = append(r.res.Cells, c)
	// A cell that lost more than analysis.MaxNotOKShare of its requests is said
	// as soon as it ends, and kept in results.json's warnings (the reports
	// print them under the title; PrintSummary after the table).
	if w := analysis.FailureWarning(c); w != "" {
		r.res.Warnings = append(r.res.Warnings, w)
		fmt.Fprintf(r.warn, "warning: %s\n", w)
	}
}

// writeResults writes results.json atomically (temp file + rename), so a crash
// or a full disk never leaves a half-written file.
func (r *runner) writeResults() error {
	var b bytes.Buffer
	if err := report.WriteJSON(&b, *r.res); err != nil {
		return &FileError{File: ResultsFile, Err: err}
	}
	return r.opt.writeOut(ResultsFile, r.live.scrubber().Bytes(b.Bytes()))
}

// finish computes the cross-cell sections and writes results.json, report.md
// and report.html, each atomically; a file not written is a *FileError.
func (r *runner) finish() error {
	r.addSections()
	err := r.writeResults()
	return errors.Join(err, r.opt.writeReports(*r.res, r.live.scrubber().Bytes))
}

// WriteReports writes r into dir (made when missing) as a run writes its
// own: name (the results as JSON: ResultsFile, or compare.json for a
// comparison), MarkdownFile and HTMLFile, each atomically and never through
// a symbolic link already at its path, at dir or at a folder above it (outpath.MkdirAll). A file not written is a *FileError;
// the others are written all the same.
func WriteReports(dir, name string, r report.Results) error {
	if err := outpath.MkdirAll("--out", dir); err != nil {
		return err
	}
	o := Options{OutDir: dir}
	var b bytes.Buffer
	err := report.WriteJSON(&b, r)
	if err != nil {
		err = &FileError{File: name, Err: err}
	} else {
		err = o.writeOut(name, b.Bytes())
	}
	return errors.Join(err, o.writeReports(r, func(b []byte) []byte { return b }))
}

// writeReports writes report.md and report.html of r into the output folder,
// each passed through scrub; a file not written is a *FileError.
func (o Options) writeReports(r report.Results, scrub func([]byte) []byte) error {
	var errs []error
	for _, f := range []struct {
		name  string
		write func(io.Writer, report.Results) error
	}{{MarkdownFile, render.WriteMarkdown}, {HTMLFile, render.WriteHTML}} {
		var b bytes.Buffer
		if err := f.write(&b, r); err != nil {
			errs = append(errs, &FileError{File: f.name, Err: err})
		} else if err := o.writeOut(f.name, scrub(b.Bytes())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func sha256Hex(b []byte) string {
	if b == nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// modulePath is this module's path, to recognise its own checkout.
const modulePath = "github.com/transferlab/transferlab"

// machine names the host the run was made on: "hostname (linux/amd64, 2
// CPUs)", so a comparison can say when two runs came from different machines.
func machine() string {
	h, err := os.Hostname()
	if err != nil {
		h = "unknown host"
	}
	return fmt.Sprintf("%s (%s/%s, %d CPUs)", h, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
}

// gitCommit returns the commit the binary was built from: Go's VCS stamp
// (with "-dirty" for uncommitted changes); else, for a binary `go run` built
// (builtByGoRun), the working folder's commit from git when that folder is a
// checkout of transferlab (`go run` stamps no VCS information, and builds
// from the folder it runs in); else "" (unknown: a binary built without the
// stamp, e.g. under GOFLAGS=-buildvcs=false, and run elsewhere says nothing
// about the checkout it happens to run in).
func gitCommit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			if modified == "true" {
				rev += "-dirty"
			}
			return rev
		}
	}
	if exe, err := os.Executable(); err != nil || !builtByGoRun(exe) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// Only a checkout of transferlab itself (`go run` from its root): the
	// working folder of another repository says nothing about this binary.
	top, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return ""
	}
	mod, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(top)), "go.mod"))
	if err != nil || !bytes.HasPrefix(mod, []byte("module "+modulePath+"\n")) {
		return ""
	}
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "-dirty"
	}
	return c
}

// builtByGoRun reports whether exe, an executable's path, is where `go run`
// puts the binary it builds: <temp>/go-build<N>/b001/exe/<name>.
func builtByGoRun(exe string) bool {
	dir := filepath.Dir(exe)
	if filepath.Base(dir) != "exe" {
		return false
	}
	return strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(dir))), "go-build")
}
