package yamlcheck

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// fieldSegment is one leading part of a check's message that names a field
// ("load.duration", "arms[1]", "amdahl.profile.window (line 3)",
// "cost.gpus (not set in the cost block)", "request.headers.X-Api-Key": a
// map key may hold a hyphen); lineSegment is a "line N" or
// "line N column M" part between them.
var (
	fieldSegment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\[\]-]*(?: \([^()]*\))?$`)
	lineSegment  = regexp.MustCompile(`^line (\d+)(?: column \d+)?$`)
	lineInParens = regexp.MustCompile(`\(line (\d+)`)
	// quotedValue is a field followed by the value it holds, quoted
	// ("kind \"vllm\"", "trace.path \"t.csv\"").
	quotedValue = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.\[\]]*) ("(?:[^"\\]|\\.)*")$`)
	// gotClause is a check's ", got VALUE" (VALUE a word or a quoted text).
	gotClause = regexp.MustCompile(`, got (?:"(?:[^"\\]|\\.)*"|[^ ,;()]+)`)
)

// splitMessage splits a check's message into the dotted field it is about,
// the rest, and the line it names, if any. The field is the message's
// leading ": "-separated parts that name fields (never its last part),
// joined by dots, a part that repeats the one before it once ("cost: line
// 58: cost.gpus: must be ≥ 1" → "cost.gpus", "must be ≥ 1", 58;
// "arms[1]: override: override.candidate: file …" →
// "arms[1].override.candidate").
func splitMessage(m string) (path, rest string, line int) {
	segs := strings.Split(m, ": ")
	var parts []string
	i := 0
	for ; i < len(segs)-1; i++ {
		seg := segs[i]
		if l := lineSegment.FindStringSubmatch(seg); l != nil {
			line, _ = strconv.Atoi(l[1])
			continue
		}
		if q := quotedValue.FindStringSubmatch(seg); q != nil {
			// The value stays at the head of the message: `server.kind
			// (line 3): "vllm": unknown server kind`.
			segs[i] = q[2]
			parts = appendParts(parts, q[1])
			break
		}
		if !fieldSegment.MatchString(seg) {
			break
		}
		if l := lineInParens.FindStringSubmatch(seg); l != nil {
			line, _ = strconv.Atoi(l[1])
		}
		seg, _, _ = strings.Cut(seg, " (")
		parts = appendParts(parts, seg)
	}
	return strings.Join(parts, "."), strings.Join(segs[i:], ": "), line
}

// appendParts adds the dotted parts of seg to parts, a part that repeats the
// one before it once.
func appendParts(parts []string, seg string) []string {
	for _, p := range strings.Split(seg, ".") {
		if len(parts) == 0 || parts[len(parts)-1] != p {
			parts = append(parts, p)
		}
	}
	return parts
}

// within reports whether dotted path p appears in field f as whole parts:
// "cost.gpus" is within "cost.gpus" and "load.rates_rps" within
// "load.rates_rps[0]", but "load.dur" is not within "load.duration".
func within(p, f string) bool {
	if p == "" {
		return false
	}
	for i := 0; i < len(f); {
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

// Locate rewrites the problems in err (a tree of errors.Join and
// fmt.Errorf("prefix: %w"), each leaf a "field: message" with any prefixes
// above it) into Problems `field (line N): message`, N the line of the
// field's value in the document (or the line the message names when the
// field is not in it: the line of the nearest block above it that is, else
// the line the message names). A ", got VALUE" of a field written as null becomes
// ", got null (no value given)", and of a field not in the document
// ", not set": its zero value is not what the user wrote. Problems about a
// field under one of Unknown, Bad or refused (dotted paths already reported
// another way) are dropped: that field decoded as its zero value, and "must
// be > 0, got 0s" would only repeat the first error. A message naming no
// field is kept as "the file (line N): …" when it names a line.
func (r *Result) Locate(err error, refused ...string) []error {
	if err == nil {
		return nil
	}
	skip := append([]string(nil), refused...)
	for _, p := range r.Unknown {
		skip = append(skip, p.Path)
	}
	for _, p := range r.Bad {
		skip = append(skip, p.Path)
	}
	var out []error
	for _, m := range leafMessages(err) {
		path, rest, line := splitMessage(m)
		follow := false
		for _, s := range skip {
			if within(s, path) {
				follow = true
				break
			}
		}
		if follow {
			continue
		}
		if path == "" && line == 0 {
			out = append(out, errors.New(m))
			continue
		}
		if f, ok := r.fields[path]; ok && path != "" {
			line = f.line
			if f.null {
				rest = gotClause.ReplaceAllString(rest, ", got null (no value given)")
			}
		} else if path != "" && len(r.fields) > 0 {
			rest = gotClause.ReplaceAllString(rest, ", not set")
			if l, ok := r.ancestorLine(path); ok {
				line = l
			}
		}
		out = append(out, Problem{Path: path, Line: line, Msg: rest})
	}
	return out
}

// ancestorLine is the line of the nearest block above dotted path that is
// in the document ("cost" for a "cost.gpus" left out), for a field that is not.
func (r *Result) ancestorLine(path string) (int, bool) {
	for {
		i := strings.LastIndexAny(path, ".[")
		if i <= 0 {
			return 0, false
		}
		path = path[:i]
		if l, ok := r.Line(path); ok {
			return l, true
		}
	}
}

// Problems returns Duplicate, Unknown then Bad, as errors.
func (r *Result) Problems() []error {
	out := make([]error, 0, len(r.Duplicate)+len(r.Unknown)+len(r.Bad))
	for _, p := range r.Duplicate {
		out = append(out, p)
	}
	for _, p := range r.Unknown {
		out = append(out, p)
	}
	for _, p := range r.Bad {
		out = append(out, p)
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
