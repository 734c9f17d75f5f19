package yamlcheck

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Problem is one config problem at a dotted field path.
type Problem struct {
	// Path is the dotted field ("load.rates_rps[2]", "cost.gpus"); "" is
	// the whole document.
	Path string
	// Line is the 1-based line of the field's value in the file (0: the
	// field is not in the file).
	Line int
	// Msg says what is wrong, in words a user reads.
	Msg string
}

// Error is `field (line N): message`, or `field: message` when the field is
// not in the file.
func (p Problem) Error() string {
	path := p.Path
	if path == "" {
		path = "the file"
	}
	if p.Line > 0 {
		return fmt.Sprintf("%s (line %d): %s", path, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", path, p.Msg)
}

// Option changes how Check walks a type.
type Option func(*settings)

type settings struct{ as map[reflect.Type]reflect.Type }

// As makes Check read the nodes of type t as type as: for a type whose own
// UnmarshalYAML decodes its block into another type (a wrapper around a
// config struct). Default: none.
func As(t, as reflect.Type) Option {
	return func(s *settings) { s.as[t] = as }
}

// Checker is a type that decodes itself (UnmarshalYAML) and can say before
// decoding why a node cannot become one of it ("" when it can): Check asks
// it through its zero value and reports the answer at the field's path and
// line, as it reports a mismatch of its own (a bare UnmarshalYAML error
// knows only its line).
type Checker interface {
	CheckYAML(n *yaml.Node) string
}

var checkerType = reflect.TypeOf((*Checker)(nil)).Elem()

// Result is what Check found in a document, and the document's field lines.
type Result struct {
	// Unknown holds one problem per key that the Go type does not have.
	Unknown []Problem
	// Duplicate holds one problem per key given again in the same mapping,
	// at the repeat's line, naming the first occurrence's line. Each repeat
	// (key and value) was removed from the document, so it decodes with the
	// first occurrence instead of failing at the repeat with every field
	// after it unset.
	Duplicate []Problem
	// Bad holds one problem per value that cannot become its field's type
	// (a decimal in a whole-number field, text in a duration or a list).
	// Each bad value's node was replaced by null, so decoding leaves that
	// field as it was instead of failing or truncating.
	Bad []Problem

	// fields maps every dotted path in the document to where its value is.
	fields map[string]field
}

// field is one path of the document: the line of its value and whether the
// value was written as null (~, null or nothing).
type field struct {
	line int
	null bool
}

// Check walks document doc (a DocumentNode or the node under it) against Go
// type t, returning every key given twice in one mapping (at any depth, the
// repeat removed), every unknown key and every value that does not fit its
// field's Go type, by dotted path and line, in the kind of value wanted ("a
// whole number", "a duration such as 14s", "a list of numbers"). A null
// value is accepted (decoding leaves the field as it was). Types with their
// own UnmarshalYAML or UnmarshalText decide what they accept; their fields
// are still walked.
func Check(doc *yaml.Node, t reflect.Type, opts ...Option) *Result {
	s := settings{as: map[reflect.Type]reflect.Type{}}
	for _, o := range opts {
		o(&s)
	}
	r := &Result{fields: map[string]field{}}
	r.dropDuplicates(doc, "")
	r.index(doc, "", 0)
	w := walker{settings: s, r: r}
	w.walk(doc, t, "")
	return r
}

// Index returns a Result holding only document doc's field lines (no type
// checks): for Locate on a document read another way.
func Index(doc *yaml.Node) *Result {
	r := &Result{fields: map[string]field{}}
	r.index(doc, "", 0)
	return r
}

// dropDuplicates removes from every mapping under n each scalar key given
// again after its first occurrence (with its value), recording a Duplicate
// problem at the repeat's dotted path and line. yaml.v3 refuses such a
// document when decoding, in words that name no field ("mapping key "x"
// already defined at line N"); the merge key "<<" is left to yaml.
func (r *Result) dropDuplicates(n *yaml.Node, path string) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, d := range n.Content {
			r.dropDuplicates(d, path)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			r.dropDuplicates(e, fmt.Sprintf("%s[%d]", path, i))
		}
	case yaml.MappingNode:
		first := map[string]int{}
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Value != "<<" {
				if line, seen := first[k.Value]; seen {
					r.Duplicate = append(r.Duplicate, Problem{Path: join(path, k.Value), Line: k.Line,
						Msg: fmt.Sprintf("key given twice, first at line %d: keep one of the two", line)})
					continue
				}
				first[k.Value] = k.Line
			}
			r.dropDuplicates(v, join(path, k.Value))
			kept = append(kept, k, v)
		}
		n.Content = kept
	}
}

// index records the line of every path's value: a scalar's own line, a
// block's (mapping or list) key line, so the line names the field.
func (r *Result) index(n *yaml.Node, path string, keyLine int) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, d := range n.Content {
			r.index(d, path, 0)
		}
		return
	case yaml.AliasNode:
		r.index(n.Alias, path, keyLine)
		return
	}
	line := n.Line
	if n.Kind != yaml.ScalarNode && keyLine > 0 {
		line = keyLine
	}
	if _, seen := r.fields[path]; !seen {
		r.fields[path] = field{line: line, null: n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"}
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			r.index(n.Content[i+1], join(path, k.Value), k.Line)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			r.index(e, fmt.Sprintf("%s[%d]", path, i), 0)
		}
	}
}

// Line is the line of the value at dotted path in the document (false: the
// path is not in it).
func (r *Result) Line(path string) (int, bool) {
	f, ok := r.fields[path]
	if !ok || path == "" {
		return 0, false
	}
	return f.line, true
}

var durationType = reflect.TypeOf(time.Duration(0))

type walker struct {
	settings
	r *Result
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n == nil {
		return
	}
	if n.Kind == yaml.DocumentNode {
		for _, d := range n.Content {
			w.walk(d, t, path)
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		w.walk(n.Alias, t, path)
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if as, ok := w.as[t]; ok {
		t = as
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // null leaves the field as it was, as yaml decodes it
	}
	msg := mismatch(n, t)
	if t.Implements(checkerType) {
		msg = reflect.Zero(t).Interface().(Checker).CheckYAML(n)
	}
	if msg != "" {
		w.r.Bad = append(w.r.Bad, Problem{Path: path, Line: n.Line, Msg: msg})
		*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
		return
	}
	switch {
	case t == durationType:
	case t.Kind() == reflect.Struct:
		fields := Fields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			p := join(path, k.Value)
			if !ok {
				w.r.Unknown = append(w.r.Unknown, Problem{Path: p, Line: k.Line,
					Msg: fmt.Sprintf("unknown key (column %d; known here: %s)", k.Column, strings.Join(sortedKeys(fields), ", "))})
				continue
			}
			w.walk(v, ft, p)
		}
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		for i, e := range n.Content {
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case t.Kind() == reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))
		}
	}
}

func sortedKeys(m map[string]reflect.Type) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// yaml11Bools are the YAML 1.1 spellings yaml.v3 still decodes into a Go bool.
var yaml11Bools = map[string]bool{"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true, "off": true, "Off": true, "OFF": true}

// mismatch says why node n cannot become a value of Go type t ("" when it
// can, or when t is not one Check knows: a custom type is left to yaml).
func mismatch(n *yaml.Node, t reflect.Type) string {
	want := typeName(t, false)
	if want == "" || decodesItself(t) {
		return ""
	}
	got := describeNode(n)
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return got + " is not " + want
		}
		if n.ShortTag() != "!!str" {
			return got + " is not " + want + " (a number needs a unit: ns, us, ms, s, m or h)"
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return got + " is not " + want
		}
	case IsInt(t) || IsUint(t):
		if n.Kind != yaml.ScalarNode {
			return got + " is not " + want
		}
		switch n.ShortTag() {
		case "!!int":
			var v any
			if err := n.Decode(&v); err != nil {
				return got + " is not " + want
			}
			if msg := intRange(v, t, got, want); msg != "" {
				return msg
			}
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
				return got + " is not " + want
			}
			if msg := intRange(f, t, got, want); msg != "" {
				return msg
			}
		default:
			return got + " is not " + want
		}
	case IsFloat(t):
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			return got + " is not " + want
		}
	case t.Kind() == reflect.Bool:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!bool" && !(n.ShortTag() == "!!str" && yaml11Bools[n.Value])) {
			return got + " is not " + want
		}
	case t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode {
			return got + " is not " + want
		}
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return got + " is not " + want
		}
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return got + " is not " + want
		}
	}
	return ""
}

var (
	yamlUnmarshaler = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// decodesItself reports whether yaml hands t's nodes to t's own
// UnmarshalYAML or UnmarshalText, which decide what they accept (their
// fields are still checked).
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(yamlUnmarshaler) || p.Implements(textUnmarshaler)
}

// intRange checks that a whole number v (int, int64, uint64 or an integral
// float64, as yaml resolves it) fits the integer type t.
func intRange(v any, t reflect.Type, got, want string) string {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint64:
		f = float64(x)
	case float64:
		f = x
	default:
		return got + " is not " + want
	}
	z := reflect.New(t).Elem()
	switch {
	case IsUint(t) && f < 0:
		return got + " is not " + want
	case IsUint(t) && (f >= math.MaxUint64 || z.OverflowUint(uint64(f))):
		return got + " is too large for this field"
	case IsInt(t) && (f >= math.MaxInt64 || f < math.MinInt64 || z.OverflowInt(int64(f))):
		return got + " is too large for this field"
	}
	return ""
}

// IsInt reports whether t is a signed integer kind.
func IsInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

// IsUint reports whether t is an unsigned integer kind.
func IsUint(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// IsFloat reports whether t is a floating-point kind.
func IsFloat(t reflect.Type) bool { return t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64 }

// IsDuration reports whether t is time.Duration.
func IsDuration(t reflect.Type) bool { return t == durationType }

// typeName names the kind of value type t takes, for a user ("" for a type
// with its own YAML decoding or an interface, which take anything).
func typeName(t reflect.Type, plural bool) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pick := func(one, many string) string {
		if plural {
			return many
		}
		return one
	}
	switch {
	case t == durationType:
		return pick("a duration such as 14s", "durations such as 14s")
	case IsInt(t):
		return pick("a whole number", "whole numbers")
	case IsUint(t):
		return pick("a whole number ≥ 0", "whole numbers ≥ 0")
	case IsFloat(t):
		return pick("a number", "numbers")
	case t.Kind() == reflect.Bool:
		return pick("true or false", "true/false values")
	case t.Kind() == reflect.String:
		return pick("text", "strings")
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		elem := typeName(t.Elem(), true)
		if elem == "" {
			elem = "values"
		}
		return pick("a list of "+elem, "lists")
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		return pick("a mapping (key: value lines)", "mappings")
	}
	return ""
}

// describeNode shows a value as the user wrote it: a scalar itself (text
// quoted), a list or a mapping by kind.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	if n.ShortTag() == "!!str" {
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// Fields maps the YAML keys of struct t (inline structs flattened) to their
// types, following yaml's tag rules.
func Fields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range Fields(ft) {
					m[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	return m
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
