package traces

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// PercentileMethod names how Stats computes token percentiles.
const PercentileMethod = "nearest-rank: the p-th percentile of n sorted values is the value at 1-based rank ceil(p·n/100)"

// TokenStats summarises one token-count column, in tokens.
type TokenStats struct {
	MinTokens  int     `json:"min_tokens"`
	P50Tokens  int     `json:"p50_tokens"`
	P90Tokens  int     `json:"p90_tokens"`
	P99Tokens  int     `json:"p99_tokens"`
	MaxTokens  int     `json:"max_tokens"`
	MeanTokens float64 `json:"mean_tokens"`
}

// HistogramBin counts the one-second bins that saw between LoArrivals and
// HiArrivals arrivals (inclusive).
type HistogramBin struct {
	LoArrivals int `json:"lo_arrivals"`
	HiArrivals int `json:"hi_arrivals"`
	Seconds    int `json:"seconds"`
}

// Stats describes a Schedule's arrivals and token lengths. Times are
// measured from the first request. Undefined ratios are null in JSON.
type Stats struct {
	Source string `json:"source"`
	Format string `json:"format"`
	SHA256 string `json:"sha256,omitempty"`
	// Start is Schedule.Start: where offset 0 lies in the source.
	Start string `json:"start,omitempty"`
	// Rows is the number of requests.
	Rows int `json:"rows"`
	// DurationS is Schedule.Duration in seconds (last offset − first offset).
	DurationS float64 `json:"duration_s"`
	// MeanRateRPS is Schedule.MeanRate: (Rows − 1) / DurationS, in req/s.
	MeanRateRPS float64 `json:"mean_rate_rps"`
	// InterArrivalCV is σ/μ of the Rows − 1 gaps between consecutive offsets
	// (population σ over the gaps): 0 for constant arrivals, 1 for Poisson,
	// > 1 for bursty traces. nil when the mean gap is 0 or Rows < 2.
	InterArrivalCV *float64 `json:"interarrival_cv"`
	// DispersionIndex1s is variance/mean (population variance) of the
	// arrival counts in one-second bins [k s, (k+1) s) from the first
	// request, k = 0 … floor(DurationS) (the last bin may be partial): 1 for
	// Poisson, > 1 for bursty. nil when Rows = 0.
	DispersionIndex1s *float64 `json:"dispersion_index_1s"`
	// MaxArrivalsPerSecond is the largest one-second bin count.
	MaxArrivalsPerSecond int `json:"max_arrivals_per_second"`
	// DuplicateOffsetRows counts requests whose offset equals the previous one's.
	DuplicateOffsetRows int `json:"duplicate_offset_rows"`
	// Input and Output summarise InputTokens and OutputTokens.
	Input  TokenStats `json:"input_tokens"`
	Output TokenStats `json:"output_tokens"`
	// PercentileMethod says how the token percentiles were computed.
	PercentileMethod string `json:"percentile_method"`
	// ArrivalsPerSecond is the histogram of one-second bin counts.
	ArrivalsPerSecond []HistogramBin `json:"arrivals_per_second_histogram"`

	// RowsRead, Skipped, SkippedLines and Dropped account for every data
	// row of the file (Schedule.RowsRead).
	RowsRead        int            `json:"rows_read"`
	Skipped         int            `json:"skipped_rows"`
	SkippedLines    []int          `json:"skipped_lines,omitempty"`
	SkippedByReason map[string]int `json:"skipped_by_reason,omitempty"`
	Dropped         map[string]int `json:"dropped_by_reason,omitempty"`
	Reordered       int            `json:"reordered_rows"`
	Clamped         int            `json:"clamped_rows"`
	Transforms      []string       `json:"transforms,omitempty"`
}

// ComputeStats summarises s (see Stats for every definition).
func ComputeStats(s Schedule) Stats {
	st := Stats{
		Source: s.Source, Format: s.Format, SHA256: s.SHA256, Start: s.Start, Rows: len(s.Requests),
		DurationS: s.Duration().Seconds(), MeanRateRPS: s.MeanRate(), PercentileMethod: PercentileMethod,
		RowsRead: s.RowsRead, Skipped: s.Skipped, SkippedLines: slices.Clone(s.SkippedLines), SkippedByReason: maps.Clone(s.SkippedByReason), Dropped: maps.Clone(s.Dropped),
		Reordered: s.Reordered, Clamped: s.Clamped, Transforms: slices.Clone(s.Transforms),
	}
	n := len(s.Requests)
	if n == 0 {
		return st
	}
	ins := make([]int, n)
	outs := make([]int, n)
	for i, r := range s.Requests {
		ins[i], outs[i] = r.InputTokens, r.OutputTokens
		if i > 0 && r.Offset == s.Requests[i-1].Offset {
			st.DuplicateOffsetRows++
		}
	}
	st.Input, st.Output = tokenStats(ins), tokenStats(outs)
	if n >= 2 {
		mean := st.DurationS / float64(n-1)
		if mean > 0 {
			var ss float64
			for i := 1; i < n; i++ {
				d := (s.Requests[i].Offset - s.Requests[i-1].Offset).Seconds() - mean
				ss += d * d
			}
			cv := math.Sqrt(ss/float64(n-1)) / mean
			st.InterArrivalCV = &cv
		}
	}
	// Walk the sorted offsets bin by bin: only non-empty bins are visited,
	// so a sparse trace spanning years costs O(n), not O(seconds).
	t0 := s.Requests[0].Offset
	bins := int64((s.Requests[n-1].Offset-t0)/time.Second) + 1
	var nonEmpty []int
	var sumSq float64
	for i := 0; i < n; {
		bin := (s.Requests[i].Offset - t0) / time.Second
		c := 0
		for ; i < n && (s.Requests[i].Offset-t0)/time.Second == bin; i++ {
			c++
		}
		nonEmpty = append(nonEmpty, c)
		sumSq += float64(c) * float64(c)
		st.MaxArrivalsPerSecond = max(st.MaxArrivalsPerSecond, c)
	}
	mean := float64(n) / float64(bins)
	disp := (sumSq/float64(bins) - mean*mean) / mean // population variance / mean
	disp = max(disp, 0)                              // rounding can leave -1e-17 for constant counts
	st.DispersionIndex1s = &disp
	st.ArrivalsPerSecond = histogram(nonEmpty, bins-int64(len(nonEmpty)), st.MaxArrivalsPerSecond)
	return st
}

// tokenStats sorts v in place and summarises it.
func tokenStats(v []int) TokenStats {
	slices.Sort(v)
	n := len(v)
	rank := func(p int) int { return v[max((p*n+99)/100, 1)-1] } // ceil(p·n/100), 1-based
	sum := 0.0
	for _, x := range v {
		sum += float64(x)
	}
	return TokenStats{MinTokens: v[0], P50Tokens: rank(50), P90Tokens: rank(90), P99Tokens: rank(99), MaxTokens: v[n-1], MeanTokens: sum / float64(n)}
}

// histogram bins the counts of the non-empty seconds plus `empty` seconds
// with no arrival: one bin per value when the largest count is below 16,
// else about 12 bins of equal width.
func histogram(counts []int, empty int64, maxC int) []HistogramBin {
	w := 1
	if maxC >= 16 {
		w = (maxC + 12) / 12
	}
	bins := make([]HistogramBin, maxC/w+1)
	for i := range bins {
		bins[i] = HistogramBin{LoArrivals: i * w, HiArrivals: i*w + w - 1}
	}
	bins[0].Seconds += int(empty)
	for _, c := range counts {
		bins[c/w].Seconds++
	}
	return bins
}

// WriteText renders st for people: a summary block, a token table and a
// text histogram of arrivals per second (bars scaled to the largest bin).
func (st Stats) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	opt := func(p *float64) string {
		if p == nil {
			return "undefined"
		}
		return fmt.Sprintf("%.4g", *p)
	}
	fmt.Fprintf(tw, "source\t%s\n", st.Source)
	fmt.Fprintf(tw, "format\t%s\n", st.Format)
	if st.SHA256 != "" {
		fmt.Fprintf(tw, "sha256\t%s\n", st.SHA256)
	}
	if st.Start != "" {
		fmt.Fprintf(tw, "first row at\t%s\n", st.Start)
	}
	fmt.Fprintf(tw, "rows\t%d\n", st.Rows)
	fmt.Fprintf(tw, "rows in the file\t%s\n", RowsText(st.Rows, st.RowsRead, st.Skipped, st.SkippedLines, st.Dropped))
	fmt.Fprintf(tw, "skipped rows\t%d%s\n", st.Skipped, counts(st.SkippedByReason))
	fmt.Fprintf(tw, "reordered / clamped rows\t%d / %d\n", st.Reordered, st.Clamped)
	if len(st.Dropped) > 0 {
		fmt.Fprintf(tw, "dropped by policy\t%d%s\n", sumCounts(st.Dropped), counts(st.Dropped))
	}
	for _, t := range st.Transforms {
		fmt.Fprintf(tw, "transform\t%s\n", t)
	}
	fmt.Fprintf(tw, "duration\t%.3f s\n", st.DurationS)
	fmt.Fprintf(tw, "mean rate\t%.4f req/s\t(rows−1)/duration\n", st.MeanRateRPS)
	fmt.Fprintf(tw, "inter-arrival CV\t%s\tσ/μ of gaps; Poisson = 1\n", opt(st.InterArrivalCV))
	fmt.Fprintf(tw, "index of dispersion\t%s\tvar/mean of arrivals per 1 s bin; Poisson = 1\n", opt(st.DispersionIndex1s))
	fmt.Fprintf(tw, "max arrivals in 1 s\t%d\n", st.MaxArrivalsPerSecond)
	fmt.Fprintf(tw, "duplicate-offset rows\t%d\n", st.DuplicateOffsetRows)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tokens\tmin\tp50\tp90\tp99\tmax\tmean\t")
	for _, r := range []struct {
		name string
		t    TokenStats
	}{{"input", st.Input}, {"output", st.Output}} {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.1f\t\n", r.name, r.t.MinTokens, r.t.P50Tokens, r.t.P90Tokens, r.t.P99Tokens, r.t.MaxTokens, r.t.MeanTokens)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "(percentiles: nearest rank)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "arrivals per second  (number of 1 s bins with that many arrivals)")
	top := 0
	for _, b := range st.ArrivalsPerSecond {
		top = max(top, b.Seconds)
	}
	for _, b := range st.ArrivalsPerSecond {
		label := fmt.Sprint(b.LoArrivals)
		if b.HiArrivals != b.LoArrivals {
			label = fmt.Sprintf("%d-%d", b.LoArrivals, b.HiArrivals)
		}
		bar := 0
		if top > 0 {
			bar = int(math.Ceil(40 * float64(b.Seconds) / float64(top)))
		}
		fmt.Fprintf(w, "%8s | %-40s %d\n", label, strings.Repeat("#", bar), b.Seconds)
	}
	return nil
}

// counts renders a reason→count map as " (a=1, b=2)" in key order, "" when empty.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
