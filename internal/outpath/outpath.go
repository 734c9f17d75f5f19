// Package outpath is how transferlab makes and writes its outputs without
// ever writing through a symbolic link: Check refuses an output path any
// component of which is a link, MkdirAll makes a folder after that check,
// and Create and WriteFile make files new, never following a link planted
// at their path. Every command that writes an output folder (run, merge,
// compare --out, validate, shard, the servers' folders) goes through it.
package outpath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// LinkError is an output path with a symbolic link among its components.
type LinkError struct {
	// Label names the path for the user ("--out", "output folder").
	Label string
	// Path is the output path as given.
	Path string
	// Component is the prefix of Path that is a link (Path itself, or a
	// folder above it).
	Component string
	// Target is where the link points.
	Target string
}

func (e *LinkError) Error() string {
	if strings.TrimRight(e.Component, string(os.PathSeparator)) == strings.TrimRight(e.Path, string(os.PathSeparator)) {
		return fmt.Sprintf("%s %s is a symbolic link (to %s): transferlab never writes through a link; give the folder's own path or another %s",
			e.Label, e.Path, strconv.Quote(e.Target), e.Label)
	}
	return fmt.Sprintf("%s %s: %s is a symbolic link (to %s): transferlab never writes through a link; give a path without links, or another %s",
		e.Label, e.Path, e.Component, strconv.Quote(e.Target), e.Label)
}

// Check refuses path when any of its components, as written (a relative
// path from the working folder; an absolute one from the root), is a
// symbolic link, to a folder or dangling: what transferlab creates or
// writes under it would land in the link's target. Components are read in
// order and the first link found is named; components not yet there (made
// later) pass, and so does a component that is not a folder (making the
// folder fails then, with its own error). label names the path in the
// error ("--out").
func Check(label, path string) error {
	sep := string(os.PathSeparator)
	parts := strings.Split(path, sep)
	for i := range parts {
		if parts[i] == "" || parts[i] == "." {
			continue
		}
		prefix := strings.Join(parts[:i+1], sep)
		st, err := os.Lstat(prefix)
		if err != nil {
			return nil // missing (made later) or unreadable: nothing to write through yet
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			to, _ := os.Readlink(prefix)
			return &LinkError{Label: label, Path: path, Component: prefix, Target: to}
		}
	}
	return nil
}

// MkdirAll makes the folder path and the folders above it that are missing,
// refusing (Check) a path with a link among its components, before and
// after making it (a link planted meanwhile is refused too).
func MkdirAll(label, path string) error {
	if err := Check(label, path); err != nil {
		return err
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	return Check(label, path)
}

// Create creates the file at path for writing, new: whatever is already
// there (a file, or a link, dangling or not) is removed first and the file
// is created exclusively and without following a link (O_EXCL,
// O_NOFOLLOW), so a write never goes through a link planted at path. The
// folders above path are the caller's (made by MkdirAll).
func Create(path string) (*os.File, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o644)
}

// WriteFile writes b to path atomically: into path + ".tmp" (Create),
// synced, then renamed over path (a rename replaces a link at path, never
// writes through it). On failure path is left as it was.
func WriteFile(path string, b []byte) error {
	return WriteFileWith(path, b, func(p string) (File, error) { return Create(p) })
}

// File is what WriteFileWith writes through (*os.File is one).
type File interface {
	io.Writer
	Sync() error
	Close() error
}

// WriteFileWith is WriteFile with the temporary file made by create (Create,
// or a stand-in around it that fails as a full disk does, in tests).
func WriteFileWith(path string, b []byte, create func(string) (File, error)) error {
	tmp := path + ".tmp"
	f, err := create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
