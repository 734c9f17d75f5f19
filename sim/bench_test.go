package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/transferlab/transferlab/stats"
)

// discardWriter is a ResponseWriter that drops bytes and counts flushes.
type discardWriter struct {
	h       http.Header
	bytes   int
	flushes int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { d.bytes += len(b); return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      { d.flushes++ }

// BenchmarkSSEWriteToken measures the per-token write path of a stream: one
// pre-encoded event written, flushed and its flush time recorded. It must not
// allocate per token (the truth slice is pre-sized to max_tokens).
func BenchmarkSSEWriteToken(b *testing.B) {
	for _, chat := range []bool{false, true} {
		b.Run(fmt.Sprintf("chat=%v", chat), func(b *testing.B) {
			const maxTokens = 1024
			ev := newSSEEvents(chat, true, "cmpl-123", "sim-llama-3-8b", 1795937843, 1020, maxTokens)
			w := &discardWriter{h: http.Header{}}
			rc := http.NewResponseController(w)
			ts := newTruthStore(1)
			tr := ts.add("x", RequestTruth{MaxTokens: maxTokens})
			b.ReportAllocs()
			b.SetBytes(int64(len(ev.token)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % maxTokens
				if k == 0 {
					tr.flushNs = tr.flushNs[:0]
				}
				if _, ok := writeTokens(w, rc, ev, tr, k, k+1, maxTokens); !ok {
					b.Fatal("write failed")
				}
			}
		})
	}
}

// BenchmarkSSEEncodeRequest measures the per-request cost of pre-encoding a stream's events.
func BenchmarkSSEEncodeRequest(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = newSSEEvents(false, true, "cmpl-123", "sim-llama-3-8b", 1795937843, 1020, 130)
	}
}

// benchServer starts a default-config server logging its steps into log, and
// a client for conns connections; stop closes both.
func benchServer(b *testing.B, log *stepLog, conns int) (*Server, *http.Client, func()) {
	s, err := New(DefaultConfig(), WithStepHook(log.add))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: conns}
	return s, &http.Client{Transport: tr}, func() {
		tr.CloseIdleConnections()
		_ = s.Close(context.Background())
	}
}

// BenchmarkStreams drives `streams` concurrent streaming requests (1020-token
// prompts, 64 output tokens, the default cost model) through a real loopback
// server and reports the simulator's own lag: how late steps end after their
// deadline (p50, p99, ms). A sim that keeps up has lag well below a decode
// step (~8–20 ms here); the figure is about the host, never a lab result.
func BenchmarkStreams(b *testing.B) {
	for _, streams := range []int{64, 256} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			var log stepLog
			s, c, stop := benchServer(b, &log, streams)
			defer stop()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			tokens := 0
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				for k := range streams {
					wg.Go(func() {
						res, err := postStream(context.Background(), c, s.BaseURL(), fmt.Sprintf("b%d-%d", i, k), 1020, 64)
						if err != nil || res.tokenEvents != 64 {
							b.Errorf("stream: %v, %d events", err, res.tokenEvents)
						}
					})
				}
				wg.Wait()
				tokens += streams * 64
			}
			el := time.Since(start)
			b.StopTimer()
			steps := log.all()
			lag := make([]float64, 0, len(steps))
			for _, st := range steps {
				lag = append(lag, float64(st.EndedAt.Sub(st.Deadline))/1e6)
			}
			sort.Float64s(lag)
			if len(lag) > 0 {
				b.ReportMetric(stats.NearestRank(lag, 0.5), "lag-p50-ms")
				b.ReportMetric(stats.NearestRank(lag, 0.99), "lag-p99-ms")
			}
			b.ReportMetric(float64(tokens)/el.Seconds(), "tok/s")
		})
	}
}

// BenchmarkRealTimeFidelity sends 300 streams (trace-like lengths from a
// seeded generator, 1 ms apart) and reports how the real makespan compares
// with the modelled busy time (GPU + CPU overhead of the steps that ran):
// wall/modelled near 1 means the host kept up with the cost model; the
// excess is host lateness (stalls longer than max_catch_up_ms, and idle time
// before the queue fills).
func BenchmarkRealTimeFidelity(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	mix := make([]Lengths, 300)
	for i := range mix {
		mix[i] = Lengths{InputTokens: 100 + rng.IntN(2900), OutputTokens: 10 + rng.IntN(490)}
	}
	for i := 0; i < b.N; i++ {
		var log stepLog
		s, c, stop := benchServer(b, &log, len(mix))
		var wg sync.WaitGroup
		start := time.Now()
		for k, l := range mix {
			wg.Go(func() {
				time.Sleep(time.Duration(k) * time.Millisecond)
				if _, err := postStream(context.Background(), c, s.BaseURL(), fmt.Sprintf("f%d", k), l.InputTokens, l.OutputTokens); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		wall := time.Since(start)
		p := s.Profile()
		continuous := 0
		steps := log.all()
		for j := 1; j < len(steps); j++ {
			if !steps[j].PlannedStart.Equal(steps[j].PlannedAt) {
				continuous++
			}
		}
		stop()
		b.ReportMetric(wall.Seconds()/(p.GPUBusy+p.CPUOverhead).Seconds(), "wall/modelled")
		b.ReportMetric(float64(continuous)/float64(max(1, len(steps)-1)), "on-schedule-frac")
		b.ReportMetric(float64(p.DecodeTokens+int64(len(mix)))/wall.Seconds(), "tok/s")
	}
}
