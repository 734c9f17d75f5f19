package yamlcheck

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

type inner struct {
	Count int     `yaml:"count"`
	Ratio float64 `yaml:"ratio"`
}

type outer struct {
	Name  string        `yaml:"name"`
	Wait  time.Duration `yaml:"wait"`
	Block inner         `yaml:"block"`
	Rates []float64     `yaml:"rates"`
	Wrap  wrapper       `yaml:"wrap"`
}

// wrapper decodes itself as an inner (as experiment.SimSection does a sim.Config).
type wrapper struct{ inner }

func (w *wrapper) UnmarshalYAML(n *yaml.Node) error { return n.Decode(&w.inner) }

func parse(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

// TestCheck: unknown keys and wrong-typed values come back by dotted path
// and line, in words; a value As maps to another type is checked as that.
func TestCheck(t *testing.T) {
	as := As(reflect.TypeOf(wrapper{}), reflect.TypeOf(inner{}))
	cases := []struct {
		name, doc string
		want      []string
	}{
		{"clean", "name: a\nwait: 2s\nblock: {count: 3, ratio: 0.5}\nrates: [1, 2.5]\n", nil},
		{"decimal in a whole number", "block:\n  count: 31.9\n", []string{"block.count (line 2): 31.9 is not a whole number"}},
		{"whole decimal accepted", "block:\n  count: 32.0\n", nil},
		{"unknown key", "name: a\nblok: {}\n", []string{"blok (line 2): unknown key (column 1; known here: block, name, rates, wait, wrap)"}},
		{"duration without unit", "wait: 14\n", []string{"wait (line 1): 14 is not a duration such as 14s (a number needs a unit"}},
		{"list element", "rates: [1, ten]\n", []string{`rates[1] (line 1): "ten" is not a number`}},
		{"wrapped block checked as its inner type", "wrap:\n  count: 2.5\n  extra: 1\n",
			[]string{"wrap.extra (line 3): unknown key", "wrap.count (line 2): 2.5 is not a whole number"}},
		{"null accepted", "block: {count: ~}\n", nil},
		// yaml.v3 refuses a key given twice with "mapping key … already
		// defined", which names neither the field's path nor the document
		// part it is in: Check names the key by its dotted path and both
		// lines, at any depth, in a list element or a block that decodes
		// itself.
		{"duplicate top-level key", "name: a\nwait: 2s\nname: b\n", []string{"name (line 3): key given twice, first at line 1: keep one of the two"}},
		{"duplicate nested key", "block:\n  count: 1\n  ratio: 2\n  count: 3\n", []string{"block.count (line 4): key given twice, first at line 2"}},
		{"duplicate in flow mapping", "block: {count: 1, count: 2}\n", []string{"block.count (line 1): key given twice, first at line 1"}},
		{"duplicate in a wrapped block", "wrap:\n  ratio: 1\n  ratio: 2\n", []string{"wrap.ratio (line 3): key given twice, first at line 2"}},
		{"duplicate under an unknown key", "blok:\n  x: 1\n  x: 2\n", []string{"blok.x (line 3): key given twice, first at line 2", "blok (line 1): unknown key"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(parse(t, tc.doc), reflect.TypeOf(outer{}), as)
			got := errors.Join(r.Problems()...)
			if len(tc.want) == 0 {
				if got != nil {
					t.Fatalf("problems for a clean document: %v", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("no problem, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("problems lack %q:\n%v", w, got)
				}
			}
		})
	}
}

// TestCheckDuplicateDecodes: a key given twice is reported once per extra
// occurrence and dropped from the document, so the document decodes (yaml.v3
// would stop at it, leaving every field after it unset) and the rest of its
// problems are reported with it.
func TestCheckDuplicateDecodes(t *testing.T) {
	doc := parse(t, "name: a\nname: b\nname: c\nwait: 2s\nblock: {count: 2.5}\n")
	r := Check(doc, reflect.TypeOf(outer{}))
	got := errors.Join(r.Problems()...)
	for _, w := range []string{
		"name (line 2): key given twice, first at line 1",
		"name (line 3): key given twice, first at line 1",
		"block.count (line 5): 2.5 is not a whole number",
	} {
		if got == nil || !strings.Contains(got.Error(), w) {
			t.Errorf("problems lack %q:\n%v", w, got)
		}
	}
	var o outer
	if err := doc.Decode(&o); err != nil {
		t.Fatalf("the checked document does not decode: %v", err)
	}
	if o.Name != "a" || o.Wait != 2*time.Second {
		t.Errorf("decoded %+v, want the first name and every field after the duplicate", o)
	}
	if l, ok := r.Line("name"); !ok || l != 1 {
		t.Errorf("Line(name) = %d, %v, want the first occurrence's line 1", l, ok)
	}
}

// TestLocate: range errors of a Validate (plain "field: message", joined
// and wrapped) come back as `field (line N): message`; a null value's "got
// 0" says null, an absent one's says not set; follow-ons of a refused value
// are dropped.
func TestLocate(t *testing.T) {
	doc := "name: a\nblock:\n  count: ~\n  ratio: -1\nrates: [1, -2]\nwait: soon\n"
	r := Check(parse(t, doc), reflect.TypeOf(outer{}))
	verr := errors.Join(
		errors.New("rates[1]: must be > 0 req/s, got -2"),
		fmt.Errorf("block: %w", errors.Join(
			errors.New("block.count: must be ≥ 1, got 0"),
			errors.New("ratio: must be > 0, got -1"))),
		errors.New("wait: must be > 0, got 0s"),                 // follow-on of the refused "soon"
		errors.New("line 9: block.missing: must be ≥ 1, got 0"), // not in the document: its block's line
		errors.New("line 9: other.missing: must be ≥ 1, got 0"), // nor its block: the line named
		errors.New(`name "a": unknown name (want b)`),           // the value quoted after the field
		errors.New("a message naming no field"),                 // kept as is
	)
	got := r.Locate(verr)
	var msgs []string
	for _, e := range got {
		msgs = append(msgs, e.Error())
	}
	want := []string{
		"rates[1] (line 5): must be > 0 req/s, got -2",
		"block.count (line 3): must be ≥ 1, got null (no value given)",
		"block.ratio (line 4): must be > 0, got -1",
		"block.missing (line 2): must be ≥ 1, not set",
		"other.missing (line 9): must be ≥ 1, not set",
		`name (line 1): "a": unknown name (want b)`,
		"a message naming no field",
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("Locate:\n got %q\nwant %q", msgs, want)
	}
	if l, ok := r.Line("block"); !ok || l != 2 {
		t.Errorf("Line(block) = %d, %v; want the key's line 2", l, ok)
	}
	if _, ok := r.Line("nope"); ok {
		t.Error("Line(nope) found a line for a path not in the document")
	}
}

func TestSplitMessage(t *testing.T) {
	cases := []struct {
		in, path, rest string
		line           int
	}{
		{"cost: line 58: cost.gpus: must be ≥ 1, got -1", "cost.gpus", "must be ≥ 1, got -1", 58},
		{"arms[1]: override: override.candidate: file x", "arms[1].override.candidate", "file x", 0},
		{"trace.path: required", "trace.path", "required", 0},
		{"amdahl.profile.windo (line 6): unknown key", "amdahl.profile.windo", "unknown key", 6},
		{"line 11: cost.gpus (not set in the cost block): must be ≥ 1, got 0", "cost.gpus", "must be ≥ 1, got 0", 11},
		{`server: kind "vllm": unknown server kind`, "server.kind", `"vllm": unknown server kind`, 0},
		{"required", "", "required", 0},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			p, r, l := splitMessage(tc.in)
			if p != tc.path || r != tc.rest || l != tc.line {
				t.Errorf("splitMessage = %q, %q, %d; want %q, %q, %d", p, r, l, tc.path, tc.rest, tc.line)
			}
		})
	}
}
