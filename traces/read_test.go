package traces

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readFixture reads testdata/name or fails the test.
func readFixture(t testing.TB, name string, opts ReadOptions) Schedule {
	t.Helper()
	s, err := ReadFile(filepath.Join("testdata", name), opts)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", name, err)
	}
	checkInvariants(t, s)
	return s
}

// checkInvariants asserts what every successfully read Schedule guarantees:
// IDs 0..n-1, non-decreasing offsets from 0, ≥ 1 input and output token,
// and ties kept in source order.
func checkInvariants(t testing.TB, s Schedule) {
	t.Helper()
	if len(s.Requests) == 0 {
		t.Fatalf("%s: empty schedule returned without error", s.Source)
	}
	if s.Requests[0].Offset != 0 {
		t.Errorf("%s: first offset %v, want 0", s.Source, s.Requests[0].Offset)
	}
	for i, r := range s.Requests {
		if r.ID != i {
			t.Fatalf("%s: request %d has ID %d", s.Source, i, r.ID)
		}
		if r.InputTokens < 1 || r.OutputTokens < 1 {
			t.Fatalf("%s: request %d (line %d) has tokens %d/%d", s.Source, i, r.SourceLine, r.InputTokens, r.OutputTokens)
		}
		if i > 0 {
			p := s.Requests[i-1]
			if r.Offset < p.Offset {
				t.Fatalf("%s: request %d offset %v before %v", s.Source, i, r.Offset, p.Offset)
			}
			if r.Offset == p.Offset && r.SourceLine < p.SourceLine {
				t.Fatalf("%s: tie at %v not in source order (lines %d, %d)", s.Source, r.Offset, p.SourceLine, r.SourceLine)
			}
		}
	}
}

func offsets(s Schedule) []time.Duration {
	out := make([]time.Duration, len(s.Requests))
	for i, r := range s.Requests {
		out[i] = r.Offset
	}
	return out
}

func equalDurations(t *testing.T, got, want []time.Duration) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d offsets %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("offset[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestReadFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file      string
		opts      ReadOptions
		format    string
		rows      int
		dropped   map[string]int
		reordered int
		check     func(t *testing.T, s Schedule)
	}{
		{file: "azure_conv_50.csv", format: FormatAzure, rows: 50, check: func(t *testing.T, s Schedule) {
			// CRLF, 7-digit fractions, no zone: 18:15:50.9951690 − 18:15:46.6805900 = 4.3145790 s.
			r := s.Requests[1]
			if r.Offset != 4314579000 || r.InputTokens != 396 || r.OutputTokens != 109 || r.SourceLine != 3 {
				t.Errorf("row 2 = %+v", r)
			}
			// Last row 18:16:13.1417340 → 26.4611440 s (python Decimal, see testdata/README.md).
			if got := s.Requests[49].Offset; got != 26461144000 {
				t.Errorf("last offset %v", got)
			}
		}},
		{file: "azure_code_tail20.csv", format: FormatAzure, rows: 20, check: func(t *testing.T, s Schedule) {
			// No newline at end of file: the last row must still be read.
			last := s.Requests[19]
			if last.InputTokens != 549 || last.OutputTokens != 173 || last.SourceLine != 21 {
				t.Errorf("last row = %+v", last)
			}
		}},
		{file: "azure2024_offsets.csv", format: FormatAzure, rows: 5, check: func(t *testing.T, s Schedule) {
			// +00:00 offsets, 6 digits, whole seconds without a fraction.
			equalDurations(t, offsets(s), []time.Duration{0, 498837000, 998837000, 1248838000, 1998837000})
		}},
		{file: "quirk_bom_crlf_blank.csv", format: FormatAzure, rows: 3, check: func(t *testing.T, s Schedule) {
			equalDurations(t, offsets(s), []time.Duration{0, 4314579000, 4319410000})
			if got := s.Requests[2].SourceLine; got != 4 {
				t.Errorf("third row's line %d, want 4", got)
			}
		}},
		{file: "quirk_header_variant.csv", format: FormatAzure, rows: 2, check: func(t *testing.T, s Schedule) {
			// Columns reordered, renamed in case/spacing, an extra column, spaces around names.
			r := s.Requests[1]
			if r.InputTokens != 8 || r.OutputTokens != 7 || r.Offset != 750*time.Millisecond {
				t.Errorf("row 2 = %+v", r)
			}
		}},
		{file: "quirk_unsorted_vidur.csv", format: FormatVidur, rows: 6, reordered: 3, check: func(t *testing.T, s Schedule) {
			var lines []int
			for _, r := range s.Requests {
				lines = append(lines, r.SourceLine)
			}
			if want := []int{2, 6, 4, 5, 3, 7}; !equalInts(lines, want) {
				t.Errorf("source lines after stable sort %v, want %v", lines, want)
			}
		}},
		{file: "vidur_conv_50.csv", format: FormatVidur, rows: 50, check: func(t *testing.T, s Schedule) {
			// Binary noise: line 6 "5.8926549999999995" is 5.892655 s exactly.
			if got := s.Requests[4].Offset; got != 5892655000 {
				t.Errorf("line 6 offset %v, want 5.892655s", got)
			}
			// The vidur file re-expresses the Azure rows: same tokens, same offsets to the ns.
			az := readFixture(t, "azure_conv_50.csv", ReadOptions{})
			for i := range s.Requests {
				a, v := az.Requests[i], s.Requests[i]
				if a.Offset != v.Offset || a.InputTokens != v.InputTokens || a.OutputTokens != v.OutputTokens {
					t.Fatalf("row %d: azure %+v vs vidur %+v", i, a, v)
				}
			}
		}},
		{file: "mooncake_conv_50.jsonl", format: FormatMooncake, rows: 50, check: func(t *testing.T, s Schedule) {
			if s.PrefixBlockTokens != 512 {
				t.Errorf("PrefixBlockTokens %d", s.PrefixBlockTokens)
			}
			dups := 0
			for i, r := range s.Requests {
				ids, err := r.PrefixBlockIDs()
				if err != nil {
					t.Fatal(err)
				}
				if want := (r.InputTokens + 511) / 512; len(ids) != want {
					t.Errorf("row %d: %d hash ids for %d tokens, want %d", i, len(ids), r.InputTokens, want)
				}
				if r.PrefixGroup != "h0" || ids[0] != 0 {
					t.Errorf("row %d: group %q ids %v", i, r.PrefixGroup, ids)
				}
				if i > 0 && r.Offset == s.Requests[i-1].Offset {
					dups++
				}
			}
			// Integer ms and bursts: the first rows all share timestamp 0.
			if dups == 0 || s.Requests[1].Offset != 0 {
				t.Errorf("duplicate timestamps not kept: %d dups", dups)
			}
		}},
		{file: "mooncake_synth_rows240-259.jsonl", format: FormatMooncake, rows: 20, check: func(t *testing.T, s Schedule) {
			// Starts at 69590 ms: offsets are from the first row. Line 11 is 134773 tokens, kept.
			if s.Requests[1].Offset != (69908-69590)*time.Millisecond {
				t.Errorf("row 2 offset %v", s.Requests[1].Offset)
			}
			if r := s.Requests[10]; r.InputTokens != 134773 || r.SourceLine != 11 {
				t.Errorf("huge row = %d tokens line %d", r.InputTokens, r.SourceLine)
			}
		}},
		{file: "burstgpt_hand.csv", format: FormatBurstGPT, rows: 4, dropped: map[string]int{DroppedBurstGPTFailed: 2}, check: func(t *testing.T, s Schedule) {
			equalDurations(t, offsets(s), []time.Duration{0, 40 * time.Second, 113 * time.Second, 116500 * time.Millisecond})
		}},
		{file: "burstgpt_hand.csv", opts: ReadOptions{KeepFailed: true}, format: FormatBurstGPT, rows: 6, check: func(t *testing.T, s Schedule) {
			if r := s.Requests[3]; r.OutputTokens != 1 || r.InputTokens != 300 {
				t.Errorf("kept failed request = %+v", r)
			}
		}},
		{file: "burstgpt_v2_columns.csv", format: FormatBurstGPT, rows: 2, dropped: map[string]int{DroppedBurstGPTFailed: 1}},
		{file: "generic.csv", opts: ReadOptions{Mapping: &Mapping{Time: "ts_ms", TimeUnit: UnitMilliseconds, Input: "in_tok", Output: "out_tok", PrefixGroup: "session"}},
			format: FormatGenericCSV, rows: 4, check: func(t *testing.T, s Schedule) {
				equalDurations(t, offsets(s), []time.Duration{0, 250 * time.Millisecond, 250 * time.Millisecond, time.Second})
				if g := s.Requests[2].PrefixGroup; g != "a" {
					t.Errorf("group %q", g)
				}
			}},
		{file: "generic.jsonl", opts: ReadOptions{Format: FormatGenericJSONL, Mapping: &Mapping{Time: "t", TimeUnit: UnitDatetime, Input: "prompt_tokens", Output: "completion_tokens", PrefixGroup: "blocks"}},
			format: FormatGenericJSONL, rows: 2, check: func(t *testing.T, s Schedule) {
				equalDurations(t, offsets(s), []time.Duration{0, 1500 * time.Millisecond})
				if r := s.Requests[1]; r.PrefixGroup != "h7" || r.PrefixBlocks != "7,9" {
					t.Errorf("row 2 = %+v", r)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			s := readFixture(t, tc.file, tc.opts)
			if s.Format != tc.format || len(s.Requests) != tc.rows || s.Skipped != 0 || s.Reordered != tc.reordered {
				t.Errorf("format %q rows %d skipped %d reordered %d; want %q %d 0 %d", s.Format, len(s.Requests), s.Skipped, s.Reordered, tc.format, tc.rows, tc.reordered)
			}
			if !equalCounts(s.Dropped, tc.dropped) {
				t.Errorf("dropped %v, want %v", s.Dropped, tc.dropped)
			}
			raw, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(raw); s.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("SHA256 %s does not match the file's bytes", s.SHA256)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestReadQuickstartTrace(t *testing.T) {
	t.Parallel()
	// The quickstart's trace: 2000 rows over the first 424 s (configs/traces/README.md).
	s, err := ReadFile(filepath.Join("..", "configs", "traces", "AzureLLMInferenceTrace_conv-head2000.csv"), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, s)
	if len(s.Requests) != 2000 || s.Duration() < 423*time.Second || s.Duration() > 425*time.Second {
		t.Errorf("%d rows over %v", len(s.Requests), s.Duration())
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		file   string
		opts   ReadOptions
		line   int
		field  string
		reason string
	}{
		{"bad time", "bad_time.csv", ReadOptions{}, 3, "TIMESTAMP", ReasonBadTime},
		{"bad tokens", "bad_tokens.csv", ReadOptions{}, 3, "ContextTokens", ReasonBadTokens},
		{"field count", "bad_fieldcount.csv", ReadOptions{}, 3, "", ReasonFieldCount},
		{"zero input tokens", "quirk_zero_tokens.csv", ReadOptions{}, 3, "ContextTokens", ReasonZeroTokens},
		{"bad json", "bad_mooncake.jsonl", ReadOptions{}, 2, "", ReasonBadJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", tc.file)
			_, err := ReadFile(path, tc.opts)
			var re *RowError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *RowError", err)
			}
			if re.File != path || re.Line != tc.line || re.Field != tc.field || re.Reason != tc.reason {
				t.Errorf("got file %q line %d field %q reason %q; want %q %d %q %q", re.File, re.Line, re.Field, re.Reason, path, tc.line, tc.field, tc.reason)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, "line ") || (tc.field != "" && !strings.Contains(msg, tc.field)) {
				t.Errorf("message %q does not name file, line and field", msg)
			}
		})
	}
}

func TestReadLenient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		rows    int
		reasons map[string]int
	}{
		{"bad_time.csv", 2, map[string]int{ReasonBadTime: 1}},
		{"bad_tokens.csv", 2, map[string]int{ReasonBadTokens: 2}},
		{"bad_fieldcount.csv", 2, map[string]int{ReasonFieldCount: 2}},
		{"quirk_zero_tokens.csv", 1, map[string]int{ReasonZeroTokens: 2}},
		{"bad_mooncake.jsonl", 2, map[string]int{ReasonBadJSON: 1, ReasonBadPrefix: 1, ReasonMissingField: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			s := readFixture(t, tc.file, ReadOptions{Lenient: true})
			total := 0
			for _, n := range tc.reasons {
				total += n
			}
			if len(s.Requests) != tc.rows || s.Skipped != total || !equalCounts(s.SkippedByReason, tc.reasons) {
				t.Errorf("rows %d skipped %d %v; want %d %d %v", len(s.Requests), s.Skipped, s.SkippedByReason, tc.rows, total, tc.reasons)
			}
		})
	}
}

func TestReadFormatErrors(t *testing.T) {
	t.Parallel()
	azure := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,1,1\n"
	tests := []struct {
		name    string
		data    string
		opts    ReadOptions
		unknown bool   // errors.Is(err, ErrUnknownFormat)
		want    string // substring of the message
	}{
		{"unknown columns", "when,prompt,completion\n1,2,3\n", ReadOptions{}, true, "when, prompt, completion"},
		{"unknown forced name", azure, ReadOptions{Format: "parquet"}, true, `"parquet"`},
		{"forced JSONL format on CSV", azure, ReadOptions{Format: FormatMooncake}, false, "file is CSV"},
		{"forced format missing column", azure, ReadOptions{Format: FormatVidur}, false, `needs a column "arrivedat"`},
		{"generic without mapping", azure, ReadOptions{Format: FormatGenericCSV}, false, "needs a column mapping"},
		{"mapping bad unit", azure, ReadOptions{Mapping: &Mapping{Time: "timestamp", TimeUnit: "hours", Input: "contexttokens", Output: "generatedtokens"}}, false, "time_unit"},
		{"mapping missing names", azure, ReadOptions{Mapping: &Mapping{Time: "timestamp"}}, false, "input, output"},
		{"empty file", "", ReadOptions{}, false, "empty file"},
		{"only blank lines", "\r\n\n  \n", ReadOptions{}, false, "empty file"},
		{"header only", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n", ReadOptions{}, false, "no usable requests"},
		{"duplicate column", "TIMESTAMP,ContextTokens,contexttokens,GeneratedTokens\n", ReadOptions{}, false, "both"},
		{"negative relative time", "arrived_at,num_prefill_tokens,num_decode_tokens\n-1,2,3\n", ReadOptions{}, false, "negative"},
		{"datetime zone garbage", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46+0x:00,1,1\n", ReadOptions{}, false, "zone"},
		{"datetime Feb 30", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-30 18:15:46,1,1\n", ReadOptions{}, false, "out of range"},
		{"ambiguous JSONL needs mapping", `{"a": 1}` + "\n", ReadOptions{}, true, "match no known format"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.data), "mem.csv", tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrUnknownFormat) != tc.unknown {
				t.Errorf("errors.Is(ErrUnknownFormat) = %v for %v", !tc.unknown, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "mem.csv") {
				t.Errorf("error %q lacks %q or the file name", err, tc.want)
			}
		})
	}
}

func TestDetectByNameNotPosition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		want   string
	}{
		{"TIMESTAMP,ContextTokens,GeneratedTokens", FormatAzure},
		{"GeneratedTokens,TIMESTAMP,ContextTokens", FormatAzure},
		{"TIMESTAMP,NumImages,ContextTokens,GeneratedTokens", FormatAzure}, // Azure 2025 multimodal layout
		{"num_decode_tokens,arrived_at,num_prefill_tokens", FormatVidur},
		{`"Timestamp","Model","Request tokens","Response tokens","Total tokens","Log Type"`, FormatBurstGPT},
		{"timestamp,request_tokens,response_tokens", FormatBurstGPT},
	}
	for _, tc := range tests {
		t.Run(tc.header, func(t *testing.T) {
			t.Parallel()
			var row []string
			for _, c := range strings.Split(tc.header, ",") {
				switch normName(c) {
				case "timestamp":
					if tc.want == FormatAzure {
						row = append(row, "2023-11-16 18:15:46.6805900")
					} else {
						row = append(row, "5")
					}
				case "model", "logtype":
					row = append(row, `"x, y"`)
				default:
					row = append(row, "3")
				}
			}
			s, err := Parse([]byte(tc.header+"\n"+strings.Join(row, ",")+"\n"), "mem", ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Format != tc.want || s.Requests[0].InputTokens != 3 {
				t.Errorf("format %q, request %+v", s.Format, s.Requests[0])
			}
		})
	}
}

func TestParseDecimalNs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		digits int
		want   int64
		bad    bool
	}{
		{"0.0", 9, 0, false},
		{"4.314579", 9, 4314579000, false},
		{"199.96150599999999", 9, 199961506000, false},
		{"5.8926549999999995", 9, 5892655000, false},
		{"1.0000000004", 9, 1000000000, false},
		{"1.0000000005", 9, 1000000001, false},
		{"69590", 6, 69590000000, false},
		{"1.5", 6, 1500000, false},
		{"+2", 9, 2000000000, false},
		{"1e3", 6, 1000000000, false},
		{".5", 9, 500000000, false},
		{"", 9, 0, true},
		{".", 9, 0, true},
		{"1.2.3", 9, 0, true},
		{"12a", 9, 0, true},
		{"99999999999", 9, 0, true}, // > 292 years of ns
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseDecimalNs([]byte(tc.in), tc.digits)
			if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
				t.Errorf("parseDecimalNs(%q, %d) = %d, %v; want %d (error %v)", tc.in, tc.digits, got, err, tc.want, tc.bad)
			}
		})
	}
}

func TestParseDatetimeMatchesTimeParse(t *testing.T) {
	t.Parallel()
	tests := []string{
		"2023-11-16 18:15:46.6805900",
		"2024-05-12 00:00:00+00:00",
		"2024-05-12 00:00:00.001163+00:00",
		"2024-02-29T23:59:59.999999999Z",
		"2024-05-12 01:30:00-02:30",
		"2000-03-01 00:00:00+0100",
		"1970-01-01 00:00:00",
	}
	for _, in := range tests {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			got, err := parseDatetimeNs([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			layouts := []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z0700"}
			for _, l := range layouts {
				if want, err := time.Parse(l, in); err == nil {
					if got != want.UnixNano() {
						t.Errorf("got %d, time.Parse %d", got, want.UnixNano())
					}
					return
				}
			}
			t.Fatalf("no reference layout parses %q", in)
		})
	}
}

func TestReadJSONLBadFirstLine(t *testing.T) {
	t.Parallel()
	data := "{\"timestamp\": 0, \"input_length\": 5\n{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
	_, err := Parse([]byte(data), "m.jsonl", ReadOptions{})
	var re *RowError
	if !errors.As(err, &re) || re.Line != 1 || re.Reason != ReasonBadJSON {
		t.Fatalf("strict: %v", err)
	}
	s, err := Parse([]byte(data), "m.jsonl", ReadOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Format != FormatMooncake || len(s.Requests) != 1 || s.SkippedByReason[ReasonBadJSON] != 1 || s.Requests[0].SourceLine != 2 {
		t.Errorf("lenient: %+v", s)
	}
	if _, err := Parse([]byte("{oops\n{nope\n"), "m.jsonl", ReadOptions{Lenient: true}); err == nil {
		t.Error("no JSON object at all accepted")
	}
}

func TestReadGzipAndStart(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "azure_conv_50.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	gz, err := Parse(buf.Bytes(), "azure_conv_50.csv.gz", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain := readFixture(t, "azure_conv_50.csv", ReadOptions{})
	if len(gz.Requests) != len(plain.Requests) || gz.Requests[49] != plain.Requests[49] || gz.SHA256 == plain.SHA256 {
		t.Errorf("gzip read differs, or hashed the decompressed bytes")
	}
	if plain.Start != "2023-11-16T18:15:46.68059Z" {
		t.Errorf("Start %q", plain.Start)
	}
	if mc := readFixture(t, "mooncake_synth_rows240-259.jsonl", ReadOptions{}); mc.Start != "1m9.59s" {
		t.Errorf("mooncake Start %q", mc.Start)
	}
	if _, err := Parse([]byte{0x1f, 0x8b, 0, 1}, "bad.gz", ReadOptions{}); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("truncated gzip: %v", err)
	}
}

// TestOrderWarning: a trace whose timestamps go backwards says where first
// (file, line, the line it goes back from, by how much) and how many rows;
// a sorted one says nothing.
func TestOrderWarning(t *testing.T) {
	t.Parallel()
	s := readFixture(t, "quirk_unsorted_vidur.csv", ReadOptions{})
	got := s.OrderWarning()
	for _, want := range []string{"quirk_unsorted_vidur.csv line 4: timestamps go backwards (1.5s earlier than line 3)", "3 rows out of time order", "replayed sorted by arrival time"} {
		if !strings.Contains(got, want) {
			t.Errorf("warning %q lacks %q", got, want)
		}
	}
	one := Schedule{Source: "one.csv", Reordered: 1, FirstBackstep: &Backstep{Line: 3, AfterLine: 2, By: time.Second}}
	if w := one.OrderWarning(); !strings.Contains(w, "; 1 row out of time order in all") {
		t.Errorf("one row out of order: %q", w)
	}
	if w := readFixture(t, "generic.csv", ReadOptions{Mapping: &Mapping{Time: "ts_ms", TimeUnit: UnitMilliseconds, Input: "in_tok", Output: "out_tok"}}).OrderWarning(); w != "" {
		t.Errorf("sorted trace warns %q", w)
	}
}

// TestBlankLineBetweenRows: blank lines before the header and after the
// last row are harmless, but one between data rows (or between the header
// and the first row) is a bad row naming file and line: a hole in the data
// is more often a lost or pasted-together row than a layout choice. In
// lenient mode it is skipped and counted (blank_line) like any bad row.
func TestBlankLineBetweenRows(t *testing.T) {
	t.Parallel()
	const head = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	const r1, r2 = "2023-11-16 18:15:46.6805900,374,44\n", "2023-11-16 18:15:50.9951690,396,109\n"
	ok := writeTrace(t, "ok.csv", "\n \n"+head+r1+r2+"\n\r\n  \n")
	s, err := ReadFile(ok, ReadOptions{})
	if err != nil || len(s.Requests) != 2 || s.Skipped != 0 {
		t.Fatalf("leading and trailing blank lines: %d requests, %d skipped, %v; want 2, 0, nil", len(s.Requests), s.Skipped, err)
	}
	for _, tc := range []struct {
		name, text string
		line       int
	}{
		{"between rows", head + r1 + "\n" + r2, 3},
		{"whitespace only, CRLF", head + r1 + " \t\r\n" + r2, 3},
		{"after the header", head + "\n" + r1 + r2, 2},
		{"two in a row", head + r1 + "\n\n" + r2 + "\n", 3},
	} {
		p := writeTrace(t, "b.csv", tc.text)
		_, err := ReadFile(p, ReadOptions{})
		var re *RowError
		if !errors.As(err, &re) || re.Line != tc.line || re.Reason != ReasonBlankLine || !strings.Contains(err.Error(), fmt.Sprintf("b.csv line %d: blank line", tc.line)) {
			t.Errorf("%s: %v; want a RowError at line %d, reason %s", tc.name, err, tc.line, ReasonBlankLine)
			continue
		}
		s, err := ReadFile(p, ReadOptions{Lenient: true})
		if err != nil || len(s.Requests) != 2 || s.SkippedByReason[ReasonBlankLine] == 0 || s.SkippedLines[0] != tc.line {
			t.Errorf("%s, lenient: %d requests, skipped %v at %v, %v; want 2 requests and the blank line counted", tc.name, len(s.Requests), s.SkippedByReason, s.SkippedLines, err)
			continue
		}
		accounted(t, s)
	}
}
