package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/shard"
	"github.com/transferlab/transferlab/sim"
)

// shardedConfig drives an already-running simulator (server.kind endpoint).
const shardedConfig = `
name: sharded
seed: %d
trace:
  path: %s
  clamp_context: 2048
load:
  mode: poisson
  rates_rps: [12]
  duration: 3s
server:
  kind: endpoint
  endpoint: {url: %s}
request:
  timeout: 15s
arms:
  - name: baseline
repetitions: 1
resolution: {aa_replicate: false}
energy:
  disabled: true
`

// cli is this test binary run as transferlab (TestMain) with args.
func cli(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exec.Command(exe, args...)
}

func readAllRecords(t *testing.T, dir string) []loadgen.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, experiment.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := loadgen.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// ksStatistic is the two-sample Kolmogorov-Smirnov statistic D (largest
// distance between the empirical CDFs) and its critical value at α = 0.001
// (c(α) = √(−ln(α/2)/2) ≈ 1.949, times √((n+m)/(n·m))).
func ksStatistic(a, b []float64) (d, crit float64) {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x := min(a[i], b[j])
		for i < len(a) && a[i] <= x {
			i++
		}
		for j < len(b) && b[j] <= x {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	n, m := float64(len(a)), float64(len(b))
	return d, math.Sqrt(-math.Log(0.001/2)/2) * math.Sqrt((n+m)/(n*m))
}

// serverSide are the simulator's own TTFT and E2E of each request (ms):
// first token generated and last bytes flushed, from the request's arrival.
func serverSide(t *testing.T, truth map[string]sim.TruthLine) (ttft, e2e []float64) {
	t.Helper()
	for id, l := range truth {
		if len(l.TokenGeneratedNs) == 0 || l.DoneNs == nil {
			t.Fatalf("truth of request %s: no token or not done", id)
		}
		ttft = append(ttft, float64(l.TokenGeneratedNs[0]-l.ArrivedNs)/1e6)
		e2e = append(e2e, float64(*l.DoneNs-l.ArrivedNs)/1e6)
	}
	return ttft, e2e
}

// TestShardedRunAgainstOneSimulator is the split run without a cluster: an
// unsplit run against one simulator, then three `run --shard i/3`
// processes against another, merged by `merge`; the merged run must hold
// the same scheduled requests (ids and offsets), each once, with the same
// token counts, and distributions the simulators' own truth cannot tell
// apart (Kolmogorov-Smirnov at α = 0.001). Then a shard killed mid-run, a
// missing shard folder and a shard of another config each fail the merge
// with a message naming them.
func TestShardedRunAgainstOneSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four load processes against two simulators (about 30 s)")
	}
	dir := t.TempDir()
	trace, err := filepath.Abs(filepath.Join("..", "..", "configs", "traces", "AzureLLMInferenceTrace_conv-head2000.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// The simulators run in this test process; the load processes are
	// children (TestMain), so each simulator sees requests from outside.
	startSim := func() *sim.Server {
		srv, err := sim.New(sim.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close(context.Background()) })
		return srv
	}
	// truthOf is srv's ground truth by request id, as GET /v1/truth serves it.
	truthOf := func(srv *sim.Server) map[string]sim.TruthLine {
		m := map[string]sim.TruthLine{}
		for _, l := range srv.TruthLines() {
			m[l.ID] = l
		}
		return m
	}
	config := func(name string, seed int, url string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(fmt.Sprintf(shardedConfig, seed, trace, url)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(c *exec.Cmd) {
		t.Helper()
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c.Args[1:], err, out)
		}
	}

	// The unsplit run, against its own simulator.
	one := startSim()
	run(cli(t, "run", config("single.yaml", 11, one.BaseURL()), "--out", filepath.Join(dir, "single"), "--quiet"))
	truthOne := truthOf(one)

	// Three shards, separate processes, one simulator.
	three := startSim()
	cfg := config("sharded.yaml", 11, three.BaseURL())
	start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	shardDir := func(i int) string { return filepath.Join(dir, fmt.Sprintf("shard-%d", i)) }
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cli(t, "run", cfg, "--shard", fmt.Sprintf("%d/3", i), "--start-at", start, "--cell-gap", "1s", "--out", shardDir(i), "--quiet")
			if out, err := c.CombinedOutput(); err != nil {
				t.Errorf("shard %d: %v\n%s", i, err, out)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	truthThree := truthOf(three)
	merged := filepath.Join(dir, "merged")
	run(cli(t, "merge", merged, shardDir(2), shardDir(0), shardDir(1), "--quiet"))

	// Same scheduled requests, ids and offsets, each once, same lengths.
	var listed []shard.MergedShard
	b, err := os.ReadFile(filepath.Join(merged, shard.ShardsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &listed); err != nil {
		t.Fatal(err)
	}
	want := map[int]loadgen.Record{}
	for _, r := range readAllRecords(t, filepath.Join(dir, "single")) {
		want[r.RequestID] = r
	}
	got := readAllRecords(t, merged)
	if len(got) != len(want) || len(want) < 20 {
		t.Fatalf("merged %d records, the unsplit run %d (want ≥ 20)", len(got), len(want))
	}
	seen := map[int]bool{}
	for _, r := range got {
		w, ok := want[r.RequestID]
		if !ok || seen[r.RequestID] {
			t.Fatalf("request %d: in the unsplit run %v, seen before %v", r.RequestID, ok, seen[r.RequestID])
		}
		seen[r.RequestID] = true
		shift := time.Duration(listed[r.RequestID%3].ShiftMs[0] * float64(time.Millisecond))
		if d := r.ScheduledAt - shift - w.ScheduledAt; d.Abs() > time.Microsecond {
			t.Errorf("request %d: scheduled at %s (shift %s), unsplit %s", r.RequestID, r.ScheduledAt, shift, w.ScheduledAt)
		}
		if r.State != loadgen.StateOK || r.OutputTokens != w.OutputTokens || r.InputTokens != w.InputTokens {
			t.Errorf("request %d: %s, %d in / %d out tokens; unsplit %d / %d", r.RequestID, r.State, r.InputTokens, r.OutputTokens, w.InputTokens, w.OutputTokens)
		}
		tr, ok := truthThree[strconv.Itoa(r.RequestID)]
		if !ok || tr.MaxTokens != r.OutputTokens {
			t.Errorf("request %d: the shared simulator's truth %+v, record's output tokens %d", r.RequestID, tr.MaxTokens, r.OutputTokens)
		}
	}
	if len(truthThree) != len(want) || len(truthOne) != len(want) {
		t.Errorf("the simulators saw %d (unsplit) and %d (shards) requests, want %d each", len(truthOne), len(truthThree), len(want))
	}
	// Distributions: the simulators' own TTFT and E2E of the unsplit and the
	// split run cannot be told apart.
	ttft1, e2e1 := serverSide(t, truthOne)
	ttft3, e2e3 := serverSide(t, truthThree)
	for _, m := range []struct {
		name string
		a, b []float64
	}{{"server TTFT", ttft1, ttft3}, {"server E2E", e2e1, e2e3}} {
		if d, crit := ksStatistic(m.a, m.b); d > crit {
			t.Errorf("%s: Kolmogorov-Smirnov D = %.3f > %.3f (α = 0.001): the split run's distribution differs", m.name, d, crit)
		}
	}

	// A shard killed mid-run and a shard of another config, at once.
	killedDir, foreignDir := filepath.Join(dir, "killed"), filepath.Join(dir, "foreign")
	start = time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	killed := cli(t, "run", cfg, "--shard", "1/3", "--start-at", start, "--cell-gap", "1s", "--out", killedDir, "--quiet")
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	foreign := cli(t, "run", config("foreign.yaml", 12, three.BaseURL()), "--shard", "2/3", "--start-at", start, "--cell-gap", "1s", "--out", foreignDir, "--quiet")
	if err := foreign.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond) // inside the 3 s cell that starts 2 s from now
	_ = killed.Process.Signal(syscall.SIGKILL)
	_ = killed.Wait()
	if err := foreign.Wait(); err != nil {
		t.Fatalf("shard of another config: %v", err)
	}
	for _, tc := range []struct {
		name string
		dirs []string
		want []string
	}{
		{"killed shard", []string{shardDir(0), killedDir, shardDir(2)}, []string{"shard 1/3 (" + killedDir + ") did not finish"}},
		{"missing folder", []string{shardDir(0), shardDir(1), filepath.Join(dir, "shard-9")}, []string{filepath.Join(dir, "shard-9")}},
		{"another config", []string{shardDir(0), shardDir(1), foreignDir}, []string{foreignDir, "not from the same run", "config"}},
	} {
		out, err := cli(t, append([]string{"merge", filepath.Join(dir, "refused")}, tc.dirs...)...).CombinedOutput()
		var ee *exec.ExitError
		if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%s: merge exited %v, want status 1\n%s", tc.name, err, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: %q lacks %q", tc.name, out, w)
			}
		}
	}
}

// TestShardScaleScript runs the committed scaling benchmark,
// results/shard-scale-2026-12-02/run.sh, at tiny scale (TINY=1: two shard
// processes at 20 req/s each against one serve-sim child, no pinning) with
// this test binary as transferlab, so the script keeps working as the
// commands change: both shards and the merge exit 0, and its table finds
// every scheduled request recorded once and ok, and the simulator's own
// counters equal to the records.
func TestShardScaleScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two shard processes and a simulator child (about 15 s)")
	}
	for _, tool := range []string{"bash", "python3", "mkfifo", "awk", "paste", "tar", "getconf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: the script needs it", tool)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	c := exec.Command("bash", filepath.Join("..", "..", "results", "shard-scale-2026-12-02", "run.sh"), exe, out)
	c.Env = append(os.Environ(), "TINY=1", "SHARDS=2", "PER_SHARD=20", "DURATION=1s", "LEAD=4", "WORK="+t.TempDir())
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("run.sh: %v\n%s", err, b)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if log := read("log.txt"); !strings.Contains(log, "N=2: shards rc 0 rc 0 | merge rc 0") {
		t.Errorf("log.txt does not show both shards and the merge exiting 0:\n%s", log)
	}
	table := read("table.txt")
	for _, want := range []string{"requests of 32 against", "recorded (equal)", "recorded ids (equal)"} {
		if !strings.Contains(table, want) {
			t.Errorf("table.txt lacks %q:\n%s", want, table)
		}
	}
	rows := 0
	lines := strings.Split(table, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "offered req/s") || i+1 >= len(lines) {
			continue
		}
		// offered, scheduled, recorded, distinct, ok, ...
		f := strings.Fields(lines[i+1])
		if len(f) < 5 || f[1] == "0" || f[2] != f[1] || f[3] != f[1] || f[4] != f[1] {
			t.Errorf("cell row %q: want scheduled = recorded = distinct = ok > 0", lines[i+1])
		}
		rows++
	}
	if rows != 1 || strings.Contains(table, "DIFFERENT") {
		t.Errorf("table.txt: %d cell rows (want 1), or a count DIFFERENT:\n%s", rows, table)
	}
}
