package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// WriteJSON writes r as indented results.json. It refuses NaN and ±Inf
// figures first (CheckFinite), naming each field.
func WriteJSON(w io.Writer, r Results) error {
	if err := CheckFinite(r); err != nil {
		return fmt.Errorf("report: results.json: %w", err)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("report: encoding results.json: %w", err)
	}
	return nil
}

// ReadResults reads a results.json file. Unknown fields are rejected and the
// schema version must be SchemaVersion; errors name the file, line and field.
func ReadResults(path string) (Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Results{}, fmt.Errorf("report: %w", err)
	}
	var r Results
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return Results{}, fmt.Errorf("report: %s line %d: %w", path, lineOf(data, se.Offset), err)
		case errors.As(err, &te):
			return Results{}, fmt.Errorf("report: %s line %d field %s: %w", path, lineOf(data, te.Offset), te.Field, err)
		}
		return Results{}, fmt.Errorf("report: %s line %d: %w", path, lineOf(data, dec.InputOffset()), err)
	}
	if r.SchemaVersion != SchemaVersion {
		return Results{}, fmt.Errorf("report: %s field schema_version: %q, this build reads %q", path, r.SchemaVersion, SchemaVersion)
	}
	return r, nil
}

// lineOf is the 1-based line of byte offset off in data.
func lineOf(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}
