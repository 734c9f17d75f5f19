package outpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckEveryComponent: a link anywhere in the output path, not only at
// its end, is refused naming the path and the component; a path without
// links (missing parts included) passes.
func TestCheckEveryComponent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real := filepath.Join(root, "a", "real")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "a", "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, component string }{
		{filepath.Join(link, "sub"), link},
		{filepath.Join(link, "sub", "deeper"), link},
		{link + "/../x", link},
		{link, link},
		{link + "/", link},
	} {
		err := Check("--out", tc.path)
		var le *LinkError
		if !errors.As(err, &le) || le.Component != tc.component || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("Check(%s) = %v, want a link error naming %s", tc.path, err, tc.component)
		}
		if err := MkdirAll("--out", tc.path); err == nil {
			t.Errorf("MkdirAll(%s) made it", tc.path)
		}
	}
	for _, ok := range []string{filepath.Join(real, "new", "sub"), real, filepath.Join(root, "missing")} {
		if err := Check("--out", ok); err != nil {
			t.Errorf("Check(%s) = %v, want nil", ok, err)
		}
	}
	if entries, _ := os.ReadDir(real); len(entries) != 0 {
		t.Errorf("the link's target holds %d entries, want none", len(entries))
	}
}

// TestCreateNotThroughLink: Create and WriteFile replace a link planted at
// the path (dangling or not) instead of writing into its target.
func TestCreateNotThroughLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"created", "written"} {
		path := filepath.Join(dir, name)
		if err := os.Symlink(victim, path); err != nil {
			t.Fatal(err)
		}
		if name == "created" {
			f, err := Create(path)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("new")
			f.Close()
		} else if err := WriteFile(path, []byte("new")); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s: %v, %v: want a regular file", name, st, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the link's target now holds %q", b)
	}
}
