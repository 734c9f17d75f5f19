package traces

import (
	"fmt"
	"slices"
	"strings"
)

// Format names accepted by ReadOptions.Format.
const (
	FormatAzure        = "azure"    // Azure LLM inference 2023/2024: TIMESTAMP,ContextTokens,GeneratedTokens (datetime)
	FormatVidur        = "vidur"    // vidur/Splitwise: arrived_at (s since start),num_prefill_tokens,num_decode_tokens
	FormatMooncake     = "mooncake" // Mooncake FAST'25 JSONL: timestamp (ms),input_length,output_length,hash_ids
	FormatBurstGPT     = "burstgpt" // BurstGPT CSV: Timestamp (s),Model,Request tokens,Response tokens,Total tokens,Log Type
	FormatGenericCSV   = "csv"      // any CSV, columns named by a Mapping
	FormatGenericJSONL = "jsonl"    // any JSONL, keys named by a Mapping
	mooncakeBlockToks  = 512        // Mooncake hash_ids block size in tokens (Mooncake FAST'25 README)
)

// Mapping names the columns (CSV header names or JSONL keys) of a generic
// trace and the unit of its time column. Names are matched after
// normalisation (case, spaces, '_' and '-' ignored), like the built-in formats.
type Mapping struct {
	// Time is the arrival-time column.
	Time string `yaml:"time" json:"time"`
	// TimeUnit is s, ms, us, ns (relative to any origin) or datetime; default s.
	TimeUnit string `yaml:"time_unit,omitempty" json:"time_unit,omitempty"`
	// Input is the prompt-token column.
	Input string `yaml:"input" json:"input"`
	// Output is the generated-token column.
	Output string `yaml:"output" json:"output"`
	// PrefixGroup is an optional column whose value becomes Request.PrefixGroup
	// (for example a session id); a JSON array of integers there is read as
	// hash_ids instead, with the first id as the group.
	PrefixGroup string `yaml:"prefix_group,omitempty" json:"prefix_group,omitempty"`
	// PrefixBlockTokens is the block size of an array-valued PrefixGroup
	// column (tokens per id); 0 when unknown.
	PrefixBlockTokens int `yaml:"prefix_block_tokens,omitempty" json:"prefix_block_tokens,omitempty"`
}

// format is one reader's column layout. Column names are normalised.
type format struct {
	name      string
	jsonl     bool
	time      string
	timeUnit  string
	input     string
	output    string
	prefix    string // optional column: hash_ids array or group string
	blockToks int
	burstGPT  bool // BurstGPT's failed-request policy applies
}

// builtinFormats lists the built-in readers in detection order. A header must
// match exactly one of them.
func builtinFormats() []format {
	return []format{
		{name: FormatAzure, time: "timestamp", timeUnit: UnitDatetime, input: "contexttokens", output: "generatedtokens"},
		{name: FormatVidur, time: "arrivedat", timeUnit: UnitSeconds, input: "numprefilltokens", output: "numdecodetokens"},
		{name: FormatMooncake, jsonl: true, time: "timestamp", timeUnit: UnitMilliseconds, input: "inputlength", output: "outputlength", prefix: "hashids", blockToks: mooncakeBlockToks},
		{name: FormatBurstGPT, time: "timestamp", timeUnit: UnitSeconds, input: "requesttokens", output: "responsetokens", burstGPT: true},
	}
}

// FormatNames lists the names ReadOptions.Format accepts.
func FormatNames() []string {
	var out []string
	for _, f := range builtinFormats() {
		out = append(out, f.name)
	}
	return append(out, FormatGenericCSV, FormatGenericJSONL)
}

// normName normalises a column name: BOM, quotes and surrounding space
// removed, lower case, ' ', '_' and '-' dropped ("Request tokens",
// "request_tokens" and "RequestTokens" all become "requesttokens").
func normName(s string) string {
	s = strings.TrimPrefix(s, "\ufeff")
	s = strings.TrimSpace(s)
	s = strings.Trim(s, `"'`)
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r == ' ' || r == '_' || r == '-' || r == '\t' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fromMapping turns a Mapping into a format of the given kind.
func fromMapping(m *Mapping, jsonl bool) (format, error) {
	f := format{name: FormatGenericCSV, jsonl: jsonl, time: normName(m.Time), timeUnit: m.TimeUnit,
		input: normName(m.Input), output: normName(m.Output), prefix: normName(m.PrefixGroup), blockToks: m.PrefixBlockTokens}
	if jsonl {
		f.name = FormatGenericJSONL
	}
	if f.timeUnit == "" {
		f.timeUnit = UnitSeconds
	}
	var missing []string
	if f.time == "" {
		missing = append(missing, "time")
	}
	if f.input == "" {
		missing = append(missing, "input")
	}
	if f.output == "" {
		missing = append(missing, "output")
	}
	if len(missing) > 0 {
		return format{}, fmt.Errorf("mapping: missing column name(s) %s", strings.Join(missing, ", "))
	}
	if _, ok := unitDigits(f.timeUnit); !ok && f.timeUnit != UnitDatetime {
		return format{}, fmt.Errorf("mapping: time_unit %q: want one of s, ms, us, ns, datetime", m.TimeUnit)
	}
	return f, nil
}

// detect picks the built-in format whose required columns are all present in
// cols (normalised names); jsonl restricts the choice to JSONL formats.
func detect(cols []string, jsonl bool) (format, error) {
	var hits []format
	for _, f := range builtinFormats() {
		if f.jsonl != jsonl {
			continue
		}
		if slices.Contains(cols, f.time) && slices.Contains(cols, f.input) && slices.Contains(cols, f.output) {
			hits = append(hits, f)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return format{}, ErrUnknownFormat
	}
	names := make([]string, len(hits))
	for i, h := range hits {
		names[i] = h.name
	}
	return format{}, fmt.Errorf("%w: header matches %s; force one with --format", ErrUnknownFormat, strings.Join(names, " and "))
}

// byName returns the built-in format called name.
func byName(name string) (format, bool) {
	for _, f := range builtinFormats() {
		if f.name == name {
			return f, true
		}
	}
	return format{}, false
}
