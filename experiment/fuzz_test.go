package experiment

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/internal/fuzzing"
)

// lineRef matches the line a config problem names (`field (line N): message`).
var lineRef = regexp.MustCompile(`\(line (\d+)\)`)

// FuzzParseConfig feeds the config loader YAML mutated from the shipped
// configs. Whatever the input, Parse returns a config that validates, or an
// error that names the file and only lines that exist in it. Inputs are
// bounded so that a failure minimises in seconds.
func FuzzParseConfig(f *testing.F) {
	fuzzing.Budget(f)
	files, _ := filepath.Glob(filepath.Join("..", "configs", "*.yaml"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("arms:\n  - name: a\n    bogus: 1\nload:\n  rates_rps: [x]\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 16<<10 {
			return
		}
		cfg, err := Parse(bytes.NewReader(in), "fuzz.yaml", ".")
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "config fuzz.yaml: ") {
				t.Fatalf("error does not name the file: %q", msg)
			}
			lines := bytes.Count(in, []byte("\n")) + 1
			for _, m := range lineRef.FindAllStringSubmatch(msg, -1) {
				if n, _ := strconv.Atoi(m[1]); n < 1 || n > lines {
					t.Fatalf("error names line %d of a %d-line file: %q", n, lines, msg)
				}
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that does not validate: %v", err)
		}
		_ = cfg.Effective()
	})
}
