package yamlcheck

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestParseSyntaxErrorLine: yaml.v3 names the line where the enclosing
// block began (off by one, often a comment) for an indentation mistake;
// Parse names the line of the mistake itself.
func TestParseSyntaxErrorLine(t *testing.T) {
	t.Parallel()
	head := "# a comment\n# another\nname: q\nseed: 1\n\nload:\n  mode: trace\n  rates_rps: [3, 10]\n"
	cases := []struct {
		name, doc string
		line      int
	}{
		{"key indented one space less", head + " warmup: 2s\n  duration: 14s\n", 9},
		{"key indented deeper", head + "arms:\n  - name: a\n  - name: b\n     sim_overrides: {rmsnorm: 2.5}\n", 12},
		{"unclosed flow mapping", head + "arms: {a: 1,\nb: [\n", 9},
		{"tab indentation", head + "x:\n\t y: 1\n", 10},
		{"valid multi-line flow before the mistake", "a: {x: 1,\n  y: 2}\nb:\n  c: 1\n d: 2\n", 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.doc))
			var p Problem
			if !errors.As(err, &p) || p.Line != tc.line {
				t.Fatalf("Parse error %v (line %d), want line %d", err, p.Line, tc.line)
			}
			if !strings.Contains(err.Error(), "(line ") || strings.Count(err.Error(), "line ") != 1 {
				t.Errorf("message %q: want one `(line N)`", err)
			}
		})
	}
	// Both of yaml.v3's messages for a tab in the indentation say what to do.
	for _, doc := range []string{head + "x:\n\t y: 1\n", "name: x\n\tseed: 1\n"} {
		if _, err := Parse(strings.NewReader(doc)); err == nil || !strings.Contains(err.Error(), "spaces only") {
			t.Errorf("a tab in the indentation of %q: %v, want it to say YAML indents with spaces only", doc, err)
		}
	}
	if n, err := Parse(strings.NewReader(head)); err != nil || n == nil {
		t.Errorf("valid document: %v", err)
	}
	if _, err := Parse(strings.NewReader("")); !errors.Is(err, io.EOF) {
		t.Errorf("empty document: %v, want io.EOF", err)
	}
}
