package traces

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/transferlab/transferlab/internal/fuzzing"
)

// fuzzRead runs Parse on arbitrary bytes with a forced format (or detection
// when format is "") and checks that it never panics and that whatever it
// accepts satisfies the Schedule invariants, in strict and lenient mode.
func fuzzRead(f *testing.F, opts ReadOptions, seeds ...string) {
	fuzzing.Budget(f)
	for _, name := range seeds {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lenient := range []bool{false, true} {
			o := opts
			o.Lenient = lenient
			s, err := Parse(data, "fuzz", o)
			if err != nil {
				continue
			}
			checkInvariants(t, s)
			if !lenient && s.Skipped != 0 {
				t.Fatalf("strict mode skipped %d rows", s.Skipped)
			}
			st := ComputeStats(s)
			if st.Rows != len(s.Requests) {
				t.Fatalf("stats rows %d != %d", st.Rows, len(s.Requests))
			}
		}
	})
}

func FuzzReadAzure(f *testing.F) {
	fuzzRead(f, ReadOptions{Format: FormatAzure}, "azure_conv_50.csv", "azure_code_tail20.csv", "azure2024_offsets.csv",
		"quirk_bom_crlf_blank.csv", "quirk_header_variant.csv", "quirk_zero_tokens.csv", "bad_time.csv", "bad_tokens.csv")
}

func FuzzReadVidur(f *testing.F) {
	fuzzRead(f, ReadOptions{Format: FormatVidur}, "vidur_conv_50.csv", "quirk_unsorted_vidur.csv", "bad_fieldcount.csv")
}

func FuzzReadMooncake(f *testing.F) {
	fuzzRead(f, ReadOptions{Format: FormatMooncake}, "mooncake_conv_50.jsonl", "mooncake_synth_rows240-259.jsonl", "bad_mooncake.jsonl")
}

func FuzzReadBurstGPT(f *testing.F) {
	fuzzRead(f, ReadOptions{Format: FormatBurstGPT}, "burstgpt_hand.csv", "burstgpt_v2_columns.csv")
}

func FuzzReadGenericCSV(f *testing.F) {
	fuzzRead(f, ReadOptions{Mapping: &Mapping{Time: "ts_ms", TimeUnit: UnitMilliseconds, Input: "in_tok", Output: "out_tok", PrefixGroup: "session"}}, "generic.csv")
}

func FuzzReadGenericJSONL(f *testing.F) {
	fuzzRead(f, ReadOptions{Mapping: &Mapping{Time: "t", TimeUnit: UnitDatetime, Input: "prompt_tokens", Output: "completion_tokens", PrefixGroup: "blocks"}}, "generic.jsonl")
}

// FuzzReadDetect lets the header decide, seeded with every fixture.
func FuzzReadDetect(f *testing.F) {
	fuzzing.Budget(f)
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); ext == ".csv" || ext == ".jsonl" {
			names = append(names, e.Name())
		}
	}
	fuzzRead(f, ReadOptions{}, names...)
}
