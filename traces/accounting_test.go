package traces

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// burstGPTMixed is a BurstGPT log with two failed requests (0 response
// tokens; the second logged with 0 request tokens as well, as BurstGPT does
// for requests that failed before their prompt was counted), one malformed
// row and one with a bad time.
const burstGPTMixed = `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
6,ChatGPT,300,0,300,Conversation log

7,ChatGPT,0,0,0,API log
8,ChatGPT,12,x,12,API log
9,ChatGPT,64,32,96,API log
later,ChatGPT,64,32,96,API log
10,ChatGPT,64,32
`

func writeTrace(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// accounted checks that every data row read is a request, skipped as
// malformed or dropped by a named policy.
func accounted(t *testing.T, s Schedule) {
	t.Helper()
	if got := len(s.Requests) + s.Skipped + sumCounts(s.Dropped); got != s.RowsRead {
		t.Errorf("rows read %d, but requests %d + skipped %d + dropped %v = %d", s.RowsRead, len(s.Requests), s.Skipped, s.Dropped, got)
	}
	if len(s.SkippedLines) != min(s.Skipped, MaxSkippedLines) {
		t.Errorf("skipped %d rows but names %d lines %v", s.Skipped, len(s.SkippedLines), s.SkippedLines)
	}
}

func TestBurstGPTKeepFailedKeepsEveryFailedRow(t *testing.T) {
	t.Parallel()
	p := writeTrace(t, "burst.csv", burstGPTMixed)
	s, err := ReadFile(p, ReadOptions{KeepFailed: true, Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, s)
	accounted(t, s)
	var lines []int
	for _, r := range s.Requests {
		lines = append(lines, r.SourceLine)
	}
	if !slices.Equal(lines, []int{2, 3, 5, 7}) {
		t.Fatalf("kept rows from lines %v, want 2 3 5 7 (both failed requests kept)", lines)
	}
	if r := s.Requests[2]; r.InputTokens != 1 || r.OutputTokens != 1 {
		t.Errorf("failed request with 0 request tokens kept as %d/%d tokens, want 1/1", r.InputTokens, r.OutputTokens)
	}
	// Line 4 is blank between rows: a bad row (blank_line) like the others.
	if s.Skipped != 4 || !slices.Equal(s.SkippedLines, []int{4, 6, 8, 9}) || len(s.Dropped) != 0 {
		t.Errorf("skipped %d lines %v dropped %v; want 4 lines 4 6 8 9, none dropped", s.Skipped, s.SkippedLines, s.Dropped)
	}
	// Strict mode keeps them too: a failed row is not a bad row.
	strict := writeTrace(t, "strict.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,c\n7,ChatGPT,0,0,0,API log\n")
	if s, err := ReadFile(strict, ReadOptions{KeepFailed: true}); err != nil || len(s.Requests) != 2 {
		t.Errorf("strict keep_failed: %d requests, error %v; want 2, none", len(s.Requests), err)
	}
}

func TestEveryRowAccounted(t *testing.T) {
	t.Parallel()
	p := writeTrace(t, "burst.csv", burstGPTMixed)
	s, err := ReadFile(p, ReadOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, s)
	if s.RowsRead != 8 || s.Dropped[DroppedBurstGPTFailed] != 2 || s.Skipped != 4 || s.SkippedByReason[ReasonBlankLine] != 1 {
		t.Errorf("rows read %d dropped %v skipped %d %v; want 8, burstgpt_failed=2, 4 (one blank_line)", s.RowsRead, s.Dropped, s.Skipped, s.SkippedByReason)
	}
	// A policy applied after reading (trace.first) is a drop with its own reason.
	f := First(s, 1)
	accounted(t, f)
	if f.Dropped[DroppedFirst] != 1 {
		t.Errorf("First(1) dropped %v, want %s=1", f.Dropped, DroppedFirst)
	}
	st := ComputeStats(f)
	if st.RowsRead != 8 || !slices.Equal(st.SkippedLines, []int{4, 6, 8, 9}) {
		t.Errorf("stats rows read %d skipped lines %v", st.RowsRead, st.SkippedLines)
	}
	// JSONL too: a bad first object and a row missing keys count.
	j := writeTrace(t, "m.jsonl", "{broken\n{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n\n{\"timestamp\": 1}\n")
	s, err = ReadFile(j, ReadOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, s)
	if s.RowsRead != 3 || !slices.Equal(s.SkippedLines, []int{1, 4}) {
		t.Errorf("jsonl: rows read %d skipped lines %v; want 3, lines 1 4", s.RowsRead, s.SkippedLines)
	}
}

func TestLineRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lines []int
		total int
		want  string
	}{
		{nil, 0, ""},
		{[]int{6}, 1, "line 6"},
		{[]int{3, 4, 5, 9, 11, 12}, 6, "lines 3-5, 9, 11-12"},
		{[]int{3, 4, 5}, 10, "lines 3-5 and 7 more"},
	} {
		if got := LineRanges(tc.lines, tc.total); got != tc.want {
			t.Errorf("LineRanges(%v, %d) = %q, want %q", tc.lines, tc.total, got, tc.want)
		}
	}
}

func TestStatsTextAccountsForRows(t *testing.T) {
	t.Parallel()
	s, err := ReadFile(writeTrace(t, "burst.csv", burstGPTMixed), ReadOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := ComputeStats(s).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "2 replayed of 8 read; 4 skipped as malformed (lines 4, 6, 8-9); 2 dropped by policy (burstgpt_failed=2)"; !strings.Contains(b.String(), want) {
		t.Errorf("trace stats text lacks %q:\n%s", want, b.String())
	}
}

// TestBinaryFileErrorIsShortAndPrintable: a binary file (here an ELF-like
// header and random bytes, with and without newlines) fails with a short
// error that carries no raw bytes.
func TestBinaryFileErrorIsShortAndPrintable(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	long := make([]byte, 4096)
	for i := range long {
		long[i] = byte(rng.IntN(256))
	}
	noNL := bytes.ReplaceAll(long, []byte{'\n'}, []byte{'x'})
	plain := strings.NewReplacer("\"", "", ",", "", "\n", "").Replace(string(long)) // one column, no quoting
	text := bytes.Repeat([]byte("a,"), 2000)                                        // a text header of 2000 columns: names truncated too
	for name, data := range map[string][]byte{"binary": append([]byte("\x7fELF\x02\x01\x01\x00"), long...), "binary-no-newline": noNL, "binary-one-column": []byte(plain), "binary-two-columns": []byte(plain[:600] + "," + plain[600:]), "wide-header": append(text, "\n1,2\n"...)} {
		for _, opts := range []ReadOptions{{}, {Lenient: true}, {Format: FormatAzure}} {
			_, err := ReadFile(writeTrace(t, name, string(data)), opts)
			if err == nil {
				t.Fatalf("%s: no error", name)
			}
			msg := err.Error()
			if len(msg) > 600 {
				t.Errorf("%s %+v: error is %d bytes long: %.200q…", name, opts, len(msg), msg)
			}
			for _, r := range msg {
				if r == utf8.RuneError || (!unicode.IsPrint(r) && r != ' ') {
					t.Errorf("%s %+v: error carries a raw byte %U: %q", name, opts, r, msg)
					break
				}
			}
		}
	}
}
