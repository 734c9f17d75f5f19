package experiment

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/internal/outpath"
)

// Files the profiling pass writes into the output folder.

// writeSummary writes stem.summary.json and stem.summary.txt.
func writeSummary(stem string, sum amdahl.Summary) error {
	b, err := json.MarshalIndent(sum, "", " ")
	if err != nil {
		return err
	}
	if err := outpath.WriteFile(stem+".summary.json", append(b, '\n')); err != nil {
		return err
	}
	f, err := outpath.Create(stem + ".summary.txt")
	if err != nil {
		return err
	}
	if err := sum.WriteText(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// gzipFile compresses path to path.gz and removes path (a Chrome trace
// shrinks ~10×; amdahl reads either). It returns the new path.
func gzipFile(path string) (string, error) {
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := outpath.Create(path + ".gz")
	if err != nil {
		return "", err
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	err = errors.Join(err, zw.Close(), out.Close())
	if err != nil {
		os.Remove(path + ".gz")
		return "", fmt.Errorf("compressing %s: %w", path, err)
	}
	in.Close()
	if err := os.Remove(path); err != nil {
		return "", err
	}
	return path + ".gz", nil
}

// relTo is p relative to dir when it can be expressed so, else p.
func relTo(dir, p string) string {
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil {
		return p
	}
	if rel, err := filepath.Rel(ad, ap); err == nil {
		return rel
	}
	return p
}
