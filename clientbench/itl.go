package clientbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/sim"
	"github.com/transferlab/transferlab/stats"
)

// The ITL check's request shape: 32-token prompts, 16-token streams, as
// loadgen's TestSimITLAccuracy. The default simulator config saturates at
// 738.6 req/s for it (serve-sim --capacity 32:16), so 500 req/s is stable.
const (
	itlInputTokens  = 32
	itlOutputTokens = 16
	// itlTargetP99 is the target for the ITL error p99.
	itlTargetP99 = 200 * time.Microsecond
)

// errStats summarises |measured − true| over n samples, in µs.
type errStats struct {
	N int `json:"n"`
	// P50Us, P99Us and MaxUs are nearest-rank quantiles (stats.NearestRank,
	// the method docs/DESIGN.md names) of |measured − true|
	// in µs; null when N is 0.
	P50Us *float64 `json:"p50_us"`
	P99Us *float64 `json:"p99_us"`
	MaxUs *float64 `json:"max_us"`
	// MeanSignedUs is the mean of measured − true in µs (a systematic offset
	// shows here: TTFT's measured value includes loopback delivery of the
	// request and of the first event); null when N is 0.
	MeanSignedUs *float64 `json:"mean_signed_us"`
}

// newErrStats summarises signed errors (measured − true).
func newErrStats(signed []time.Duration) errStats {
	s := errStats{N: len(signed)}
	if len(signed) == 0 {
		return s
	}
	absUs := make([]float64, len(signed))
	var sum time.Duration
	for i, d := range signed {
		sum += d
		absUs[i] = float64(max(d, -d)) / float64(time.Microsecond)
	}
	slices.Sort(absUs)
	us := func(v float64) *float64 { return &v }
	s.P50Us, s.P99Us = us(stats.NearestRank(absUs, 0.5)), us(stats.NearestRank(absUs, 0.99))
	s.MaxUs = us(absUs[len(absUs)-1])
	s.MeanSignedUs = us(float64(sum/time.Duration(len(signed))) / float64(time.Microsecond))
	return s
}

// itlClientRow is one client's ITL-accuracy result.
type itlClientRow struct {
	Client    string `json:"client"`
	Scheduled int    `json:"scheduled"`
	// OK is the requests that ended in state ok; NotOK the others (their gaps
	// are not compared; FirstError says why the first failed).
	OK    int `json:"ok"`
	NotOK int `json:"not_ok"`
	// MissingTruth is ok requests the simulator's export did not hold.
	MissingTruth int `json:"missing_truth"`
	// EventCountMismatch is ok requests whose measured token events differ in
	// number from the simulator's flushed token events: their gaps cannot be
	// paired, so they are counted here and not compared.
	EventCountMismatch int `json:"event_count_mismatch"`
	// Compared is the requests whose gaps and TTFT were compared.
	Compared int `json:"compared_requests"`
	// ITLError is |measured ITL − true ITL| per token gap: measured is the
	// difference of two token events' arrival times at the client, true the
	// difference of the same two events' flush times in the simulator (each
	// on its own process's monotonic clock).
	ITLError errStats `json:"itl_error"`
	// TTFTError is |measured TTFT − true TTFT| per request: measured is the
	// first token event − SentAt (client), true the first flush − handler
	// entry (simulator).
	TTFTError errStats `json:"ttft_error"`
	// ITLWithinTargetPct is the share of compared gaps whose ITL error is
	// ≤ 200 µs, in % (null when no gap was compared): it tells rare
	// descheduling apart from a broad error.
	ITLWithinTargetPct *float64 `json:"itl_error_within_target_pct"`
	// ScheduleLagP99Ms is the run's schedule-lag p99 in ms.
	ScheduleLagP99Ms reportFloat `json:"schedule_lag_p99_ms"`
	// GOMAXPROCS is this process's GOMAXPROCS at the end of the run (Go
	// lowers it to the CPUs it may use when pinned).
	GOMAXPROCS int `json:"gomaxprocs"`
	// TargetMet is true when ITLError's p99 ≤ 200 µs and
	// every scheduled request was compared.
	TargetMet  bool   `json:"itl_error_p99_target_met"`
	FirstError string `json:"first_error,omitempty"`
}

// itlSection is bench-client's ITL-accuracy check: known
// token gaps from the simulator against the client's measured ITLs.
type itlSection struct {
	RateRPS      int     `json:"rate_rps"`
	DurationS    float64 `json:"duration_s"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	// Server says where the simulator ran (a serve-sim child per client, or in-process).
	Server string `json:"server"`
	// Pinned says which CPUs the simulator child and bench-client were
	// pinned to, or "not pinned".
	Pinned string `json:"pinned"`
	// LoadAvgBefore and LoadAvgAfter are /proc/loadavg's 1, 5 and 15 min load
	// averages before the first client and after the last (null: unreadable).
	LoadAvgBefore []float64 `json:"load_avg_before"`
	LoadAvgAfter  []float64 `json:"load_avg_after"`
	// TargetP99Us is the target for the ITL error p99 in µs.
	TargetP99Us float64        `json:"target_p99_us"`
	Clients     []itlClientRow `json:"clients"`
}

// loadAvg reads the 1, 5 and 15 min load averages (nil when unreadable).
func loadAvg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		if out[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return nil
		}
	}
	return out
}

// itlPinning decides the CPUs for --pin: the simulator child gets the last
// CPU this process may use, this process the others.
func itlPinning() (child int, self []int, err error) {
	cpus, err := allowedCPUs()
	if err != nil {
		return 0, nil, err
	}
	if len(cpus) < 2 {
		return 0, nil, fmt.Errorf("needs at least 2 CPUs, this process may use %v", cpus)
	}
	return cpus[len(cpus)-1], cpus[:len(cpus)-1], nil
}

// benchITL runs the ITL-accuracy check for every client: a fresh simulator
// per client (so no client sees another's load), a uniform schedule of
// o.itlRate req/s for o.itlDuration, then the simulator's truth export
// compared per request and per token gap.
func benchITL(ctx context.Context, o Options, rep *benchReport, log io.Writer) (err error) {
	sec := &itlSection{RateRPS: o.itlRate, DurationS: o.itlDuration.Seconds(), InputTokens: itlInputTokens, OutputTokens: itlOutputTokens,
		Server: "serve-sim child process per client (default simulator config)", Pinned: "not pinned", TargetP99Us: float64(itlTargetP99) / 1e3}
	if o.inProcess {
		sec.Server = "in-process simulator per client (default config; shares this process's CPUs)"
	}
	childCPU := -1
	if o.pin {
		var self []int
		if childCPU, self, err = itlPinning(); err != nil {
			return fmt.Errorf("bench-client: flag --pin: %w", err)
		}
		restore, err := pinProcess(self)
		if err != nil {
			return fmt.Errorf("bench-client: flag --pin: %w", err)
		}
		defer func() {
			if rerr := restore(); rerr != nil && err == nil {
				err = fmt.Errorf("bench-client: restoring the CPU mask after --pin: %w", rerr)
			}
		}()
		sec.Pinned = fmt.Sprintf("simulator child on CPU %d, bench-client on CPUs %v", childCPU, self)
	}
	// The section holds every client finished, also when one fails or the
	// run is interrupted; the load after is read however it ends.
	sec.LoadAvgBefore = loadAvg()
	rep.ITL = sec
	defer func() { sec.LoadAvgAfter = loadAvg() }()
	for _, name := range o.clients {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		row, err := benchITLOne(ctx, o, name, childCPU)
		if err != nil {
			return err
		}
		sec.Clients = append(sec.Clients, row)
		fmt.Fprintf(log, "bench-client: %s ITL check at %d req/s: %d gaps, error p99 %s µs\n", name, o.itlRate, row.ITLError.N, fmtUs(row.ITLError.P99Us))
	}
	return nil
}

// startSim starts a fresh simulator for one client: in-process with
// --in-process, else a simulator child of this binary (`bench-client
// --serve-sim`, the default config; pinned to childCPU when ≥ 0).
func startSim(ctx context.Context, o Options, childCPU int) (*fastServer, error) {
	if o.inProcess {
		s, err := sim.New(sim.DefaultConfig())
		if err != nil {
			return nil, fmt.Errorf("bench-client: simulator: %w", err)
		}
		if err := s.Start("127.0.0.1:0"); err != nil {
			_ = s.Close(context.Background())
			return nil, fmt.Errorf("bench-client: simulator: %w", err)
		}
		return &fastServer{url: s.BaseURL(), close: func() error {
			c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return s.Close(c)
		}}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench-client: finding this binary for the simulator child: %w", err)
	}
	args := []string{Command, "--serve-sim", "127.0.0.1:0"}
	if childCPU >= 0 {
		args = append(args, "--server-cpus", strconv.Itoa(childCPU))
	}
	return startChild(ctx, exe, args)
}

func benchITLOne(ctx context.Context, o Options, name string, childCPU int) (row itlClientRow, err error) {
	row.Client = name
	copts, err := clientOptions(name)
	if err != nil {
		return row, err
	}
	srv, err := startSim(ctx, o, childCPU)
	if err != nil {
		return row, err
	}
	defer closeServer(srv, &err)
	n := int(float64(o.itlRate) * o.itlDuration.Seconds())
	s := constSchedule(n, o.itlRate, itlInputTokens, itlOutputTokens)
	s.Source = fmt.Sprintf("synthetic:uniform rate=%d (bench-client ITL check)", o.itlRate)
	var keep loadgen.SliceSink
	sum, err := loadgen.Replay(ctx, srv, s, nil, &keep, append(copts, loadgen.WithOfferedLoad(float64(o.itlRate)), loadgen.WithTimeout(time.Minute))...)
	if err != nil {
		return row, fmt.Errorf("bench-client: %s ITL check at %d req/s: %w", name, o.itlRate, err)
	}
	if !sum.Complete {
		return row, fmt.Errorf("bench-client: %s ITL check at %d req/s: %s", name, o.itlRate, sum.IncompleteReason)
	}
	row.GOMAXPROCS = runtime.GOMAXPROCS(0)
	truth, err := fetchTruth(ctx, srv.url)
	if err != nil {
		return row, fmt.Errorf("bench-client: %s ITL check: %w", name, err)
	}
	compareTruth(&row, keep.Records, truth)
	row.Scheduled = n
	row.ScheduleLagP99Ms = msf(sum.ScheduleLagP99)
	row.TargetMet = row.ITLError.P99Us != nil && *row.ITLError.P99Us <= float64(itlTargetP99)/1e3 && row.Compared == n
	return row, nil
}

// compareTruth pairs each ok record with the simulator's truth for its
// request id and fills row's counts and error statistics.
func compareTruth(row *itlClientRow, recs []loadgen.Record, truth map[string]sim.TruthLine) {
	var itl, ttft []time.Duration
	for i := range recs {
		r := &recs[i]
		if r.State != loadgen.StateOK {
			row.NotOK++
			if row.FirstError == "" {
				row.FirstError = fmt.Sprintf("request %d: %s: %s", r.RequestID, r.State, r.Error)
			}
			continue
		}
		row.OK++
		tr, ok := truth[strconv.Itoa(r.RequestID)]
		if !ok {
			row.MissingTruth++
			continue
		}
		if len(tr.TokenFlushedNs) != len(r.Events) {
			row.EventCountMismatch++
			continue
		}
		row.Compared++
		if m, ok := r.TTFT(); ok && len(tr.TokenFlushedNs) > 0 {
			ttft = append(ttft, m-time.Duration(tr.TokenFlushedNs[0]-tr.ArrivedNs))
		}
		for k, g := range r.ITLs() {
			itl = append(itl, g-time.Duration(tr.TokenFlushedNs[k+1]-tr.TokenFlushedNs[k]))
		}
	}
	row.ITLError, row.TTFTError = newErrStats(itl), newErrStats(ttft)
	if len(itl) > 0 {
		in := 0
		for _, d := range itl {
			if max(d, -d) <= itlTargetP99 {
				in++
			}
		}
		pct := 100 * float64(in) / float64(len(itl))
		row.ITLWithinTargetPct = &pct
	}
}

// fetchTruth reads the simulator's GET /v1/truth into a map by request id.
func fetchTruth(ctx context.Context, base string) (map[string]sim.TruthLine, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+sim.TruthPath, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", sim.TruthPath, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: status %d: %s", sim.TruthPath, resp.StatusCode, b)
	}
	return decodeTruth(resp.Body, base+sim.TruthPath)
}

// decodeTruth parses JSON lines of sim.TruthLine; errors name src and the line.
func decodeTruth(r io.Reader, src string) (map[string]sim.TruthLine, error) {
	out := map[string]sim.TruthLine{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var l sim.TruthLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", src, line, err)
		}
		out[l.ID] = l
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	return out, nil
}

// fmtMsFromUs prints an optional µs figure in ms ("–" when there were no
// samples).
func fmtMsFromUs(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f", *v/1000)
}

// fmtUs prints an optional µs figure ("–" when there were no samples).
func fmtUs(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f", *v)
}

// fmtPct prints an optional percentage with one decimal ("–" when unset).
func fmtPct(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f", *v)
}

// printITLTable prints the ITL-accuracy section.
func printITLTable(out io.Writer, s *itlSection) {
	la := func(v []float64) string {
		if v == nil {
			return "unreadable"
		}
		return fmt.Sprintf("%.2f %.2f %.2f", v[0], v[1], v[2])
	}
	fmt.Fprintf(out, "\nITL accuracy vs the simulator's truth (target: ITL error p99 ≤ %.0f µs) — %d req/s uniform for %.3g s, %d-token prompts, %d-token streams;\n"+
		"simulator: %s; pinned: %s; load average (1/5/15 min) %s before, %s after\n",
		s.TargetP99Us, s.RateRPS, s.DurationS, s.InputTokens, s.OutputTokens, s.Server, s.Pinned, la(s.LoadAvgBefore), la(s.LoadAvgAfter))
	fmt.Fprintln(out, "error = |measured − true|: ITL per token gap (client event arrivals vs simulator flushes), TTFT per request (first event − send vs first flush − handler entry)")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tok\tcompared\tcount mismatch\tno truth\tgaps\tITL err p50 µs\tp99 µs\tmax µs\tmean signed µs\t≤ 200 µs\tTTFT err p50 µs\tp99 µs\tmax µs\tmean signed µs\tlag p99 ms\tGOMAXPROCS\tp99 ≤ target\t")
	for _, c := range s.Clients {
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s %%\t%s\t%s\t%s\t%s\t%.3f\t%d\t%t\t\n", c.Client, c.OK, c.Scheduled, c.Compared, c.EventCountMismatch, c.MissingTruth,
			c.ITLError.N, fmtUs(c.ITLError.P50Us), fmtUs(c.ITLError.P99Us), fmtUs(c.ITLError.MaxUs), fmtUs(c.ITLError.MeanSignedUs), fmtPct(c.ITLWithinTargetPct),
			fmtUs(c.TTFTError.P50Us), fmtUs(c.TTFTError.P99Us), fmtUs(c.TTFTError.MaxUs), fmtUs(c.TTFTError.MeanSignedUs), float64(c.ScheduleLagP99Ms), c.GOMAXPROCS, c.TargetMet)
	}
	_ = tw.Flush()
	for _, c := range s.Clients {
		if c.FirstError != "" {
			fmt.Fprintf(out, "%s: first failed request: %s\n", c.Client, c.FirstError)
		}
	}
}
