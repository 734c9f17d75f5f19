package integrate

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/traces"
)

// TestRealServerContract launches the reference server's real request
// handling (refserver.make_app around python/tests/fake_engine.py, no torch)
// and replays requests through loadgen as a run does: every request ends ok
// with the tokens asked for (ignore_eos), its events carry the tokens the
// server sent, one or several per event, and the server's usage agrees with
// the prompt and the output. The stand-in fake_refserver.py cannot check
// this: it is a second copy of the contract.
func TestRealServerContract(t *testing.T) {
	t.Parallel()
	py := pythonFor("aiohttp")
	if py == "" {
		if os.Getenv("TRANSFERLAB_PYTHON_AIOHTTP") == "1" {
			t.Fatal("TRANSFERLAB_PYTHON_AIOHTTP=1 but no python3 imports aiohttp")
		}
		t.Skip("no python3 with aiohttp (Debian: apt-get install python3-aiohttp): the real server's contract is not checked")
	}
	script, err := filepath.Abs(filepath.Join("python", "tests", "serve_fake_engine.py"))
	must(t, err)
	sched := traces.Schedule{Requests: []traces.Request{
		{ID: 0, InputTokens: 12, OutputTokens: 7},
		{ID: 1, Offset: time.Millisecond, InputTokens: 1, OutputTokens: 1},
		{ID: 2, Offset: 2 * time.Millisecond, InputTokens: 300, OutputTokens: 32},
	}}
	for _, perStep := range []int{1, 3} {
		t.Run(strconv.Itoa(perStep)+" tokens per event", func(t *testing.T) {
			t.Parallel()
			spec, err := CommandSpec(CommandConfig{
				Argv:         []string{py, script, "--host", "{host}", "--port", "{port}", "--tokens-per-step", strconv.Itoa(perStep)},
				Env:          map[string]string{"PYTHONDONTWRITEBYTECODE": "1"},
				ReadyTimeout: 2 * time.Minute,
			}, HookSetup{}, t.TempDir())
			must(t, err)
			ctx := context.Background()
			p, err := Launch(ctx, spec)
			must(t, err)
			defer p.Close(ctx)
			keep := &loadgen.SliceSink{}
			if _, err := loadgen.Replay(ctx, p, sched, nil, keep, loadgen.WithClosedLoop(2),
				loadgen.WithIgnoreEOS(true), loadgen.WithTimeout(time.Minute)); err != nil {
				t.Fatal(err)
			}
			if len(keep.Records) != len(sched.Requests) {
				t.Fatalf("%d records for %d requests", len(keep.Records), len(sched.Requests))
			}
			for _, r := range keep.Records {
				q := sched.Requests[r.RequestID]
				sum := 0
				for _, e := range r.Events {
					sum += e.Tokens
				}
				wantEvents := (q.OutputTokens + perStep - 1) / perStep
				if r.State != loadgen.StateOK || r.OutputTokens != q.OutputTokens || sum != q.OutputTokens ||
					len(r.Events) != wantEvents || r.UsageMismatch || r.FinishReason != "length" {
					t.Errorf("request %d (%d in, %d out): state %s %q, %d output tokens (%s), %d events carrying %d, usage mismatch %v, finish %q; want ok, %d events",
						r.RequestID, q.InputTokens, q.OutputTokens, r.State, r.Error, r.OutputTokens, r.OutputTokensSource,
						len(r.Events), sum, r.UsageMismatch, r.FinishReason, wantEvents)
				}
				if r.PromptTokens != q.InputTokens {
					t.Errorf("request %d: server counted %d prompt tokens, %d sent", r.RequestID, r.PromptTokens, q.InputTokens)
				}
			}
			must(t, p.Close(ctx))
		})
	}
}
