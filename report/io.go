package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteJSON writes r as indented results.json. It refuses NaN and ±Inf
// figures first (CheckFinite), naming each field.
func WriteJSON(w io.Writer, r Results) error {
	if err := CheckFinite(r); err != nil {
		return fmt.Errorf("results.json: %w", err)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encoding results.json: %w", err)
	}
	return nil
}

// ReadResults reads a results.json file (or, given a folder, the
// results.json in it). Unknown fields are rejected and the schema version
// must be SchemaVersion; errors name the file, line and field, and a file
// that is not a results.json at all (records.jsonl, report.md, a config, a
// compare.json) is said to be one, not answered with a JSON parse error.
func ReadResults(path string) (Results, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "results.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Results{}, err
	}
	if why := notResults(data); why != "" {
		return Results{}, fmt.Errorf("%s is not a results.json (%s): give the results.json a run wrote in its output folder", path, why)
	}
	var r Results
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return Results{}, fmt.Errorf("%s line %d: %w", path, lineOf(data, se.Offset), err)
		case errors.As(err, &te):
			return Results{}, fmt.Errorf("%s line %d field %s: %w", path, lineOf(data, te.Offset), te.Field, err)
		}
		return Results{}, fmt.Errorf("%s line %d: %w", path, lineOf(data, dec.InputOffset()), err)
	}
	if r.SchemaVersion != SchemaVersion {
		return Results{}, fmt.Errorf("%s field schema_version: %q, this build reads %q", path, r.SchemaVersion, SchemaVersion)
	}
	return r, nil
}

// notResults says what data looks like when it cannot be a results.json: not
// one JSON object, several (JSON Lines, as records.jsonl), or an object
// without schema_version. "" when it may be one (decoding says the rest).
func notResults(data []byte) string {
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		return "the file is empty"
	}
	if t[0] != '{' {
		return "it does not hold a JSON object: report.md, report.html and configs are not results"
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil {
		return "" // a damaged results.json: the decoder names the line
	}
	if dec.More() {
		return "it holds several JSON objects, one per line, as records.jsonl and cells.jsonl do"
	}
	if _, ok := top["schema_version"]; ok {
		return ""
	}
	if _, ok := top["results"]; ok {
		return "it is a compare.json: the comparison of two runs, whose results field is not a run's"
	}
	return "no schema_version field"
}

// lineOf is the 1-based line of byte offset off in data.
func lineOf(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}
