package yamlcheck

import (
	"bytes"
	"io"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// maxRelocateLines bounds the prefix search of Parse (quadratic in the
// document's size; configs are a few hundred lines).
const maxRelocateLines = 5000

// yamlErr splits yaml.v3's syntax errors: "yaml: line N: message".
var yamlErr = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// Parse reads one YAML document from r into a node tree. io.EOF (as is)
// when r holds no document. A syntax error is a Problem at the line of the
// mistake: yaml.v3 names the line where the enclosing block began, one too
// early (for an indentation mistake deep in a file, often a comment near
// the top), so Parse finds the first line at which the document's prefix
// fails with the same message. The error of a document too long for that
// search (over 5000 lines) keeps yaml.v3's line.
func Parse(r io.Reader) (*yaml.Node, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var root yaml.Node
	err = yaml.NewDecoder(bytes.NewReader(data)).Decode(&root)
	if err == nil || err == io.EOF {
		if err == nil {
			return &root, nil
		}
		return nil, err
	}
	m := yamlErr.FindStringSubmatch(err.Error())
	if m == nil {
		return nil, err
	}
	p := Problem{Msg: m[2] + hint(m[2])}
	p.Line, _ = strconv.Atoi(m[1])
	if l := firstFailingLine(data, m[2]); l > 0 {
		p.Line = l
	}
	return nil, p
}

// firstFailingLine is the 1-based line k such that the document's first k
// lines fail to parse with message msg and no shorter prefix does; 0 when
// none does or the document is too long to search.
func firstFailingLine(data []byte, msg string) int {
	ends := []int{}
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	if len(ends) > maxRelocateLines {
		return 0
	}
	for k, end := range ends {
		var n yaml.Node
		err := yaml.NewDecoder(bytes.NewReader(data[:end])).Decode(&n)
		if err == nil || err == io.EOF {
			continue
		}
		if m := yamlErr.FindStringSubmatch(err.Error()); m != nil && m[2] == msg {
			return k + 1
		}
	}
	return 0
}

// hint adds what usually causes yaml.v3's terser syntax messages.
func hint(msg string) string {
	switch msg {
	case "did not find expected key", "mapping values are not allowed in this context",
		"did not find expected '-' indicator", "block sequence entries are not allowed in this context":
		return " (is it indented like the keys it belongs with?)"
	case "found character that cannot start any token":
		return " (a tab? YAML indents with spaces only)"
	case "found a tab character that violates indentation":
		return " (YAML indents with spaces only)"
	}
	return ""
}
