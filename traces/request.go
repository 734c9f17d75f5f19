package traces

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Request is one scheduled inference request, normalised from any trace format.
type Request struct {
	// ID is the request's index in its Schedule, 0-based, unique within it.
	ID int `json:"id"`
	// Offset is when the request is due, measured from the schedule's start
	// (the first request of a freshly read trace has Offset 0).
	Offset time.Duration `json:"offset_ns"`
	// InputTokens is the prompt length in tokens (≥ 1).
	InputTokens int `json:"input_tokens"`
	// OutputTokens is the number of tokens to generate (≥ 1); sent as max_tokens.
	OutputTokens int `json:"output_tokens"`
	// PrefixGroup identifies requests that share a KV prefix ("" when the
	// trace says nothing; from Mooncake hash_ids otherwise).
	PrefixGroup string `json:"prefix_group,omitempty"`
	// SourceLine is the 1-based line of the source file the request came from
	// (the header is line 1); 0 for synthetic requests.
	SourceLine int `json:"source_line"`
	// PrefixBlocks are the request's prefix-block ids in order, as decimal
	// numbers joined by commas ("0,1,2"; Mooncake hash_ids, with
	// Schedule.PrefixBlockTokens tokens per block): two requests share a KV
	// prefix for exactly as many leading ids as they have in common. "" when
	// the trace has none. A string keeps Request comparable; PrefixBlockIDs
	// decodes it.
	PrefixBlocks string `json:"prefix_blocks,omitempty"`
}

// Schedule is an ordered list of requests (non-decreasing Offset) plus where it came from.
type Schedule struct {
	// Source names the file (path) or generator ("synthetic:poisson rate=2 seed=1").
	Source string `json:"source"`
	// Format is the detected or forced format name ("azure", "vidur", "mooncake", ...).
	Format string `json:"format"`
	// Requests are sorted by Offset; ties keep source order.
	Requests []Request `json:"-"`
	// RowsRead counts the data rows of the source file (the lines after a
	// CSV header up to its last non-blank one, a blank one between rows a
	// bad row; every non-blank JSONL line); 0 for synthetic
	// schedules. Every row read is accounted for:
	// RowsRead = len(Requests) + Skipped + the sum of Dropped.
	RowsRead int `json:"rows_read"`
	// Skipped counts bad rows dropped in lenient mode (0 in strict mode).
	Skipped int `json:"skipped_rows"`
	// SkippedLines are the 1-based file lines of the skipped rows, in file
	// order: all of them up to MaxSkippedLines, then Skipped says how many more.
	SkippedLines []int `json:"skipped_lines,omitempty"`
	// Clamped counts requests whose input was clamped to a context limit.
	Clamped int `json:"clamped_rows"`

	// Start is where the schedule's offset 0 lies in the source: the first
	// row's wall-clock time (RFC 3339, UTC) for datetime traces, or its time
	// since the trace's own origin ("1m9.59s") for relative ones. "" for
	// synthetic schedules.
	Start string `json:"start,omitempty"`
	// SHA256 is the hex SHA-256 of the source file's bytes as stored (before
	// any gzip decompression; "" for synthetic schedules), so a report can pin
	// the exact trace it replayed.
	SHA256 string `json:"sha256,omitempty"`
	// SkippedByReason splits Skipped by reason ("bad_time", "bad_tokens",
	// "zero_tokens", "field_count", "bad_json", ...); nil when nothing was skipped.
	SkippedByReason map[string]int `json:"skipped_by_reason,omitempty"`
	// Dropped counts rows left out on purpose by a documented policy, not
	// because they were malformed: "burstgpt_failed" (BurstGPT rows with zero
	// response tokens, see ReadOptions.KeepFailed) and "first_n" (First). Dropped rows are counted in
	// strict mode too.
	Dropped map[string]int `json:"dropped_by_reason,omitempty"`
	// Reordered counts rows whose timestamp was earlier than an earlier row's:
	// the reader sorts rows stably by time and counts them here (0 for sorted traces).
	Reordered int `json:"reordered_rows"`
	// FirstBackstep is the first row whose timestamp is earlier than an
	// earlier row's (nil for a sorted trace): OrderWarning says it.
	FirstBackstep *Backstep `json:"first_backstep,omitempty"`
	// PrefixBlockTokens is the number of tokens per PrefixBlocks id (512 for
	// Mooncake); 0 when the trace has no prefix blocks.
	PrefixBlockTokens int `json:"prefix_block_tokens,omitempty"`
	// Transforms lists, in order, every transform applied since the file was
	// read or generated (for example "scale_to_rate rate_rps=4 time_factor=1.17"),
	// so a report can say how the replayed schedule was derived.
	Transforms []string `json:"transforms,omitempty"`
}

// Duration is the offset of the last request (0 for fewer than two requests).
func (s Schedule) Duration() time.Duration {
	if len(s.Requests) < 2 {
		return 0
	}
	return s.Requests[len(s.Requests)-1].Offset - s.Requests[0].Offset
}

// MeanRate is the mean arrival rate in requests per second: (n−1)/Duration,
// the number of inter-arrival gaps over their total span. 0 when undefined.
func (s Schedule) MeanRate() float64 {
	d := s.Duration()
	if d <= 0 {
		return 0
	}
	return float64(len(s.Requests)-1) / d.Seconds()
}

// PrefixBlockIDs decodes PrefixBlocks; nil when it is empty.
func (r Request) PrefixBlockIDs() ([]int64, error) {
	if r.PrefixBlocks == "" {
		return nil, nil
	}
	parts := strings.Split(r.PrefixBlocks, ",")
	ids := make([]int64, len(parts))
	for i, p := range parts {
		id, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("traces: request %d prefix block %d: %w", r.ID, i, err)
		}
		ids[i] = id
	}
	return ids, nil
}
