package experiment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/transferlab/transferlab/internal/outpath"
)

// LockFile marks an output folder in use by a run; it is created exclusively,
// so two runs can never write into one folder, and removed when the run ends.
// It holds "pid P on host H, started T": a lock whose process is gone on this
// host (a killed run) is taken over.
const LockFile = ".transferlab-run.lock"

// lockText is a lock file's content for process pid on host.
func lockText(pid int, host string, at time.Time) string {
	return fmt.Sprintf("pid %d on host %s, started %s\n", pid, host, at.UTC().Format(time.RFC3339))
}

// lockOwner reads a lock file's pid and host; ok is false when it holds no
// such line (written by another tool, or half-written).
func lockOwner(text string) (pid int, host string, ok bool) {
	f := strings.Fields(text)
	if len(f) < 5 || f[0] != "pid" || f[2] != "on" || f[3] != "host" {
		return 0, "", false
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	return pid, strings.TrimSuffix(f[4], ","), true
}

// processGone reports whether no process pid exists on this host: signal 0
// checks without sending anything; EPERM means it exists (another user's).
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	err = p.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// claimOutDir makes dir (refusing a link among its path's components:
// outpath.MkdirAll), refuses it when a symbolic link stands below it
// (checkNoSymlinks) and locks it (lockOutDir): what every writer of a run's
// folder does before writing.
func claimOutDir(dir string) (unlock func(), err error) {
	if err := outpath.MkdirAll("--out", dir); err != nil {
		var le *outpath.LinkError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("output folder: %w", err)
	}
	if err := checkNoSymlinks(dir); err != nil {
		return nil, err
	}
	return lockOutDir(dir)
}

// lockOutDir takes the output folder for this run, or says which run holds
// it. A lock left by a process that is gone on this host is stale: it is
// removed (and said so in the returned note) and the folder taken.
func lockOutDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, LockFile)
	host, _ := os.Hostname()
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := f.WriteString(lockText(os.Getpid(), host, time.Now()))
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				os.Remove(path)
				return nil, fmt.Errorf("output folder %s: writing %s: %w", dir, LockFile, werr)
			}
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("output folder: %w", err)
		}
		if st, lerr := os.Lstat(path); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
			return nil, symlinkError(dir, LockFile, path)
		}
		held, _ := os.ReadFile(path)
		pid, lockHost, ok := lockOwner(string(held))
		if attempt == 0 && ok && lockHost == host && processGone(pid) {
			// The run that held it was killed: its process is gone.
			if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return nil, fmt.Errorf("output folder %s: removing the stale %s of process %d: %w", dir, LockFile, pid, rerr)
			}
			continue
		}
		return nil, fmt.Errorf("output folder %s is in use by another run (%s: %s); choose another --out, or delete the lock file if no run is using the folder (a lock whose process is gone on this host is taken over by itself)",
			dir, LockFile, quoteLock(held))
	}
}

// quoteLock renders a lock file's content for a message: one line, at most 120 bytes.
func quoteLock(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return strconv.Quote(s)
}

// symlinkError refuses a symbolic link where the run would write.
func symlinkError(dir, rel, path string) error {
	to, _ := os.Readlink(path)
	return fmt.Errorf("output folder %s: %s is a symbolic link (to %s): a run never writes through a link; remove it or choose another --out", dir, rel, strconv.Quote(to))
}

// CheckOutNotLink refuses an output folder any component of whose path, as
// given, is a symbolic link (the folder itself or one above it; to a folder
// or dangling; a trailing slash does not hide it): the run's or
// comparison's files would be written through it into the link's target.
// Missing components pass (they are made as folders). The error names the
// path, the component that is a link and its target (outpath.Check).
func CheckOutNotLink(dir string) error {
	return outpath.Check("--out", dir)
}

// checkNoSymlinks refuses an output folder holding a symbolic link anywhere
// below it (a run's files, its servers folder and everything in it): a link
// would send the run's writes outside the folder or onto another file,
// dangling or not, with or without --overwrite. The folder itself is
// checked by CheckOutNotLink.
func checkNoSymlinks(dir string) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("output folder: %w", err)
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("output folder: %w", err)
		}
		if path != root && d.Type()&fs.ModeSymlink != 0 {
			rel, _ := filepath.Rel(root, path)
			return symlinkError(dir, rel, path)
		}
		return nil
	})
}

// outFile is an output file being written; *os.File is one. Tests put a
// stand-in around it (Options.wrap) that fails like a full disk.
type outFile interface {
	io.Writer
	Name() string
	Sync() error
	Close() error
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
}

// createOut creates the file at path for writing, new: a file (or link,
// dangling or not) already there is removed first and the new one created
// exclusively and without following a link (outpath.Create), so a write
// never goes through a symbolic link.
func (o Options) createOut(path string) (outFile, error) {
	f, err := outpath.Create(path)
	if err != nil {
		return nil, err
	}
	if o.wrap != nil {
		return o.wrap(f), nil
	}
	return f, nil
}

// writeOut writes b to name in the output folder atomically: into
// name + ".tmp", synced, then renamed over name. On any failure the
// temporary file is removed and name is left as it was, and the error is a
// *FileError naming it.
func (o Options) writeOut(name string, b []byte) error {
	err := outpath.WriteFileWith(filepath.Join(o.OutDir, name), b, func(p string) (outpath.File, error) { return o.createOut(p) })
	if err != nil {
		return &FileError{File: name, Err: err}
	}
	o.Written.Add(name)
	return nil
}

// FileError is an output file the run could not write whole. Results files
// and reports are then absent (or as an earlier write left them, whole);
// records.jsonl keeps the whole records written before the failure.
type FileError struct {
	// File is the name inside the output folder (RecordsFile, ResultsFile, ...).
	File string
	// Records is, for RecordsFile, the number of whole records it holds.
	Records int
	// Err is the cause (a full disk: syscall.ENOSPC).
	Err error
}

func (e *FileError) Error() string {
	if e.File == RecordsFile {
		return fmt.Sprintf("%s not written whole (it keeps %d whole records, the rest are lost): %v", e.File, e.Records, e.Err)
	}
	return fmt.Sprintf("%s not written: %v", e.File, e.Err)
}

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// OutputFiles are the files a run writes at the top of its output folder,
// in the order it writes them.
var OutputFiles = []string{RecordsFile, ResultsFile, MarkdownFile, HTMLFile}

// Written records what a run writes at the top of its output folder, as
// its writers write it: a file by name once it is created (records.jsonl,
// cells.jsonl) or written whole (results.json and the reports, atomically),
// a folder as "servers/" once a server was started there. The console's
// "written to" list is this, not a reading of the folder, so it names
// exactly what this run wrote. Safe for concurrent use; a nil *Written
// records nothing.
type Written struct {
	mu    sync.Mutex
	names []string
}

// Add records name (a top-level file, or a folder with a trailing "/") once.
func (w *Written) Add(name string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.names, name) {
		w.names = append(w.names, name)
	}
}

// Names lists what was recorded, OutputFiles first in their order, then the
// rest by name, less the files err (the run's error) names as not written
// whole (FilesNotWritten).
func (w *Written) Names(err error) []string {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	names := slices.Clone(w.names)
	w.mu.Unlock()
	failed := FilesNotWritten(err)
	var first, rest []string
	for _, n := range names {
		switch {
		case slices.Contains(failed, n):
		case slices.Contains(OutputFiles, n):
			first = append(first, n)
		default:
			rest = append(rest, n)
		}
	}
	slices.SortFunc(first, func(a, b string) int { return slices.Index(OutputFiles, a) - slices.Index(OutputFiles, b) })
	slices.Sort(rest)
	return append(first, rest...)
}

// FilesNotWritten lists, in OutputFiles order, the files that err (Run's
// error, possibly joined and wrapped) says were not written whole.
func FilesNotWritten(err error) []string {
	failed := map[string]bool{}
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if fe, ok := e.(*FileError); ok {
			failed[fe.File] = true
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	var out []string
	for _, f := range OutputFiles {
		if failed[f] {
			out = append(out, f)
		}
	}
	return out
}

// DefaultOutDir is the output folder when none is given:
// runs/NAME-<UTC time of now, YYYYMMDD-HHMMSS>, relative to the working
// folder (run: NAME is the config's file name without its extension;
// validate: "validation").
func DefaultOutDir(name string, now time.Time) string {
	return filepath.Join("runs", name+"-"+now.UTC().Format("20060102-150405"))
}

// CheckReportsOut refuses dir as WriteReports' folder: a symbolic link or a
// file, and, unless overwrite, a folder that already holds files (the
// reports would replace report.md and other files there without asking). A
// missing or empty folder passes; every error begins "--out DIR" and names
// the first file held.
func CheckReportsOut(dir string, overwrite bool) error {
	if err := CheckOutNotLink(dir); err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("--out %s is a file, not a folder: give a new or empty folder for the reports", dir)
	}
	if overwrite {
		return nil
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("--out %s: the folder already holds files (%s): choose another --out, or pass --overwrite to replace them", dir, entries[0].Name())
	}
	return nil
}

// CheckOutDir refuses dir before anything is measured: a file, a folder that already
// holds a run (its results or records) unless overwrite or resume, and one
// holding entries a run does not write (a home folder, a results folder with
// notes; IsRunOutput) unless overwrite: the run's files would be mixed with
// them. A missing or empty folder, or one holding only a run's outputs,
// passes.
func CheckOutDir(dir string, overwrite, resume bool) error {
	if err := CheckOutNotLink(dir); err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("--out %s is a file, not a folder: give a new or empty folder for the run's outputs", dir)
	}
	for _, f := range []string{ResultsFile, RecordsFile} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil && !overwrite && !resume {
			return fmt.Errorf("output folder %s already holds a run (%s): choose another --out, or pass --overwrite to replace it", dir, f)
		}
	}
	if overwrite {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	var foreign []string
	for _, e := range entries {
		if !IsRunOutput(e.Name()) {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	shown := foreign[:min(len(foreign), 3)]
	more := ""
	if len(foreign) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(foreign)-len(shown))
	}
	return fmt.Errorf("output folder %s holds files that are not a run's (%s%s): choose a new or empty --out, or pass --overwrite to write the run beside them",
		dir, strings.Join(shown, ", "), more)
}
