package experiment

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// nodeCheck is what checkNodes found in a YAML document: keys the Go type
// does not have, and values that do not fit their field's type.
type nodeCheck struct {
	// unknown holds one message per unknown key, with its line and column.
	unknown []string
	// bad holds one problem per value that cannot become its field's type
	// (a decimal in a whole-number field, text in a duration or a list).
	bad []badValue
}

// badValue is one value of the wrong type, at a dotted field path.
type badValue struct {
	path string
	line int
	msg  string
}

func (b badValue) Error() string {
	p := b.path
	if p == "" {
		p = "the file"
	}
	return fmt.Sprintf("%s (line %d): %s", p, b.line, b.msg)
}

// checkNodes walks a decoded YAML document against the Go type it will be
// decoded into. It returns every unknown key (with its exact line and column
// and its dotted path: yaml's own KnownFields stops at the first custom
// unmarshaller and reports nested lines relative to it) and every value that
// does not fit its field's Go type, in words a user reads ("a whole number",
// "a duration such as 14s", "a list of numbers"). yaml.v3 would truncate 2.9
// into an int field without a word; checkNodes refuses it. Each bad value's
// node is replaced by null, so decoding leaves that field at its zero value
// instead of failing or truncating; Parse then drops the range checks that
// zero value would fail (a follow-on of the same mistake).
func checkNodes(n *yaml.Node, t reflect.Type) nodeCheck {
	var c nodeCheck
	c.walk(n, t, "")
	return c
}

var (
	durationType   = reflect.TypeOf(time.Duration(0))
	simSectionType = reflect.TypeOf(SimSection{})
)

func (c *nodeCheck) walk(n *yaml.Node, t reflect.Type, path string) {
	if n == nil {
		return
	}
	if n.Kind == yaml.DocumentNode {
		for _, d := range n.Content {
			c.walk(d, t, path)
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		c.walk(n.Alias, t, path)
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == simSectionType {
		t = t.Field(0).Type // the embedded sim.Config
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // null leaves the field at its zero value, as yaml decodes it
	}
	if msg := mismatch(n, t); msg != "" {
		c.bad = append(c.bad, badValue{path: path, line: n.Line, msg: msg})
		*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
		return
	}
	switch {
	case t == durationType:
	case t.Kind() == reflect.Struct:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			p := join(path, k.Value)
			if !ok {
				c.unknown = append(c.unknown, fmt.Sprintf("line %d column %d: %s: unknown key", k.Line, k.Column, p))
				continue
			}
			c.walk(v, ft, p)
		}
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		for i, e := range n.Content {
			c.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case t.Kind() == reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			c.walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))
		}
	}
}

// yaml11Bools are the YAML 1.1 spellings yaml.v3 still decodes into a Go bool.
var yaml11Bools = map[string]bool{"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true, "off": true, "Off": true, "OFF": true}

// mismatch says why node n cannot become a value of Go type t ("" when it
// can, or when t is not one checkNodes knows: a custom type is left to yaml).
func mismatch(n *yaml.Node, t reflect.Type) string {
	want := typeWords(t)
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
	case isInt(t) || isUint(t):
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
	case isFloat(t):
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
// UnmarshalYAML or UnmarshalText, which decide what they accept (their fields
// are still checked). SimSection's block is checked as the sim.Config it holds.
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
	case isUint(t) && f < 0:
		return got + " is not " + want
	case isUint(t) && (f >= math.MaxUint64 || z.OverflowUint(uint64(f))):
		return got + " is too large for this field"
	case isInt(t) && (f >= math.MaxInt64 || f < math.MinInt64 || z.OverflowInt(int64(f))):
		return got + " is too large for this field"
	}
	return ""
}

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

func isUint(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

func isFloat(t reflect.Type) bool { return t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64 }

// typeWords names the kind of value type t takes, for a user ("" for a type
// with its own YAML decoding or an interface, which take anything).
func typeWords(t reflect.Type) string {
	return typeName(t, false)
}

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
	case isInt(t):
		return pick("a whole number", "whole numbers")
	case isUint(t):
		return pick("a whole number ≥ 0", "whole numbers ≥ 0")
	case isFloat(t):
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

// fieldSegment is one leading part of a check's message that names a field
// ("load.duration", "arms[1]", "amdahl.profile.window (line 3)"); lineSegment
// is a "line N" or "line N column M" part between them.
var (
	fieldSegment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\[\]]*(?: \(line \d+\))?$`)
	lineSegment  = regexp.MustCompile(`^line \d+(?: column \d+)?$`)
)

// messageField is the dotted field a check's message is about: its leading
// ": "-separated parts that name fields, joined by dots, a part that repeats
// the one before it once ("cost: line 58: cost.gpus: must be ≥ 1" →
// "cost.gpus"; "arms[1]: override: override.candidate: file …" →
// "arms[1].override.candidate").
func messageField(m string) string {
	var parts []string
	for _, seg := range strings.Split(m, ": ") {
		if lineSegment.MatchString(seg) {
			continue
		}
		if !fieldSegment.MatchString(seg) {
			break
		}
		seg, _, _ = strings.Cut(seg, " (")
		for _, p := range strings.Split(seg, ".") {
			if len(parts) == 0 || parts[len(parts)-1] != p {
				parts = append(parts, p)
			}
		}
	}
	return strings.Join(parts, ".")
}

// within reports whether dotted path p appears in field f as whole parts:
// "cost.gpus" is within "cost.cost.gpus" and "load.rates_rps" within
// "load.rates_rps[0]", but "load.dur" is not within "load.duration".
func within(p, f string) bool {
	for i := 0; p != ""; {
		j := strings.Index(f[i:], p)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(p)
		if (j == 0 || f[j-1] == '.') && (end == len(f) || f[end] == '.' || f[end] == '[') {
			return true
		}
		i = j + 1
	}
	return false
}

// dropFollowOns returns the messages of err (a tree of joined and wrapped
// errors, each leaf given the prefixes of the errors that wrap it) without
// those about a field whose value checkNodes refused: that field decoded as
// its zero value, and "must be > 0, got 0s" would only repeat the first
// error.
func dropFollowOns(err error, bad []badValue) []error {
	var out []error
	for _, m := range leafMessages(err) {
		f := messageField(m)
		follow := false
		for _, b := range bad {
			if within(b.path, f) {
				follow = true
				break
			}
		}
		if !follow {
			out = append(out, errors.New(m))
		}
	}
	return out
}

// leafMessages flattens a tree of errors.Join and fmt.Errorf("prefix: %w")
// into one message per leaf, each with every prefix above it.
func leafMessages(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, leafMessages(e)...)
		}
		return out
	}
	if inner := errors.Unwrap(err); inner != nil {
		if prefix, ok := strings.CutSuffix(err.Error(), inner.Error()); ok && prefix != "" {
			ls := leafMessages(inner)
			for i := range ls {
				ls[i] = prefix + ls[i]
			}
			return ls
		}
	}
	return []string{err.Error()}
}

// yamlFields maps the YAML keys of struct t (inline structs flattened) to
// their types, following yaml's tag rules.
func yamlFields(t reflect.Type) map[string]reflect.Type {
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
				for k, v := range yamlFields(ft) {
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
