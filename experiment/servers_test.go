package experiment

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/internal/secret"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/sim"
)

// childSimArg makes the test binary a serve-sim stand-in (childSim) instead
// of running tests: os.Args[0] childSimArg --addr HOST:PORT [--override
// OP=FACTOR] [--require-key] [--open-models] [--never-ready].
const childSimArg = "tl-child-sim"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == childSimArg {
		if err := childSim(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "child sim:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// childSim serves the simulator (as `transferlab serve-sim` does) on --addr
// until SIGTERM or SIGINT. --override divides an op's modelled time by a
// factor; --require-key answers 401 to any request but GET /health (as
// vLLM's --api-key does) whose Authorization is not "Bearer $TL_CHILD_KEY",
// with --open-models GET /v1/models too (a gateway that lists models to
// anyone); --never-ready answers 503 to everything.
func childSim(args []string) error {
	cfg := sim.DefaultConfig()
	cfg.Overrides = map[string]float64{}
	var addr string
	requireKey, openModels, neverReady := false, false, false
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--addr":
			i++
			addr = args[i]
		case "--override":
			i++
			op, f, _ := strings.Cut(args[i], "=")
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return err
			}
			cfg.Overrides[op] = v
		case "--require-key":
			requireKey = true
		case "--open-models":
			openModels = true
		case "--never-ready":
			neverReady = true
		default:
			return fmt.Errorf("unknown argument %q", args[i])
		}
	}
	s, err := sim.New(cfg)
	if err != nil {
		return err
	}
	want := "Bearer " + os.Getenv("TL_CHILD_KEY")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case neverReady:
			w.WriteHeader(http.StatusServiceUnavailable)
		case requireKey && r.URL.Path != "/health" && !(openModels && r.URL.Path == "/v1/models") && r.Header.Get("Authorization") != want:
			w.WriteHeader(http.StatusUnauthorized)
		default:
			w.Header().Set("Server", "child-sim/1")
			s.Handler().ServeHTTP(w, r)
		}
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println("child sim serving on", ln.Addr())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	return s.Close(ctx)
}

// startChildSim starts a serve-sim stand-in child process with args and
// returns its base URL; it is stopped at the test's end.
func startChildSim(t *testing.T, env []string, args ...string) string {
	t.Helper()
	port, err := integrate.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(os.Args[0], append([]string{childSimArg, "--addr", addr}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	url := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("child sim on %s not up: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// truthE2E (key: the server's API key) is the simulator's own mean E2E (ms)
// over the requests with these ids, from GET /v1/truth: from handler entry to the response's last flush.
func truthE2E(t *testing.T, url, key string, ids map[string]bool) float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/v1/truth", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/v1/truth: %s", url, resp.Status)
	}
	var sum float64
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l sim.TruthLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if ids[l.ID] && l.DoneNs != nil {
			sum += float64(*l.DoneNs-l.ArrivedNs) / 1e6
			n++
		}
	}
	if n != len(ids) {
		t.Fatalf("%s: truth for %d of %d measured requests", url, n, len(ids))
	}
	return sum / float64(n)
}

// lastRep is the repetition whose requests the simulators' truth holds: a
// request id sent again replaces its earlier truth line.
const lastRep = 1

// meanE2E is the mean E2E (ms) transferlab measured for arm's measured ok
// requests of repetition lastRep (records.jsonl).
func meanE2E(t *testing.T, out, arm string) float64 {
	t.Helper()
	var sum float64
	n := 0
	for _, r := range readRecords(t, out) {
		if e, ok := r.E2E(); ok && r.Arm == arm && r.Repetition == lastRep && !r.Warmup && r.State == loadgen.StateOK {
			sum += float64(e) / 1e6
			n++
		}
	}
	return sum / float64(n)
}

func readRecords(t *testing.T, out string) []loadgen.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(out, RecordsFile))
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

// measuredIDs are the request ids of arm's measured, ok records of
// repetition lastRep.
func measuredIDs(t *testing.T, out, arm string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, r := range readRecords(t, out) {
		if r.Arm == arm && r.Repetition == lastRep && !r.Warmup && r.State == loadgen.StateOK {
			ids[strconv.Itoa(r.RequestID)] = true
		}
	}
	if len(ids) == 0 {
		t.Fatalf("arm %s: no measured ok request", arm)
	}
	return ids
}

// grepTree fails the test for every file under dir that holds one of secrets.
func grepTree(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	n := 0
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds the secret %q", p, s)
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walking %s: %v (%d files)", dir, err, n)
	}
}

const canaryConfig = `
name: canary-test
seed: 3
trace:
  path: ../configs/traces/AzureLLMInferenceTrace_conv-head2000.csv
  clamp_context: 2048
load:
  rates_rps: [3]
  duration: 2s
repetitions: 2
server:
  kind: endpoint
  endpoint:
    pins: {image: "sha256:0123abcd", engine: serve-sim}
request:
  headers:
    Authorization: "Bearer ${TL_TEST_KEY}"
otel:
  enabled: false
  endpoint: http://otel-user:OTELSECRET-42@127.0.0.1:4318
arms:
  - name: production
    endpoint: {url: %s}
  - name: canary-faster
    endpoint: {url: %s}
  - name: canary-slower
    endpoint: {url: %s}
decision:
  metric: e2e
  use_mean: true
  regression_margin: 0.02
`

// TestEndpointCanaryMatchesTruth measures a canary of three serve-sim child
// processes through server.kind endpoint (production; a candidate whose
// GEMM is 2× faster; one whose GEMM is 2× slower), with an API key that the
// servers require. The E2E ratio of each candidate to production must be
// the one the simulators' own ground truth gives (GET /v1/truth over the
// same requests, within 2 %), the verdicts those ratios predict (pass for
// the faster, fail for the slower; when the rule excluded every load as
// client-bound, as on a loaded CI box, the ratio must lie on the truth's
// side of 1 and its interval contain the truth instead: its width is the
// loaded host's run-to-run spread), and no file of the output folder may
// hold the key, the URL's password or the OTel endpoint's password.
func TestEndpointCanaryMatchesTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three simulators in real time for ~15 s; skipped under -short")
	}
	const key = "sk-canary-SECRET-9876"
	t.Setenv("TL_TEST_KEY", key)
	env := []string{"TL_CHILD_KEY=" + key}
	prod := startChildSim(t, env, "--require-key")
	fast := startChildSim(t, env, "--require-key", "--override", "gate_up_proj=2")
	slow := startChildSim(t, env, "--require-key", "--override", "gate_up_proj=0.5")
	// The production URL carries a user:password (sent as basic auth, ignored by the sim).
	prodURL := strings.Replace(prod, "http://", "http://ops:URLPASS-777@", 1)
	text := fmt.Sprintf(canaryConfig, prodURL, fast, slow)
	cfg, err := Parse(strings.NewReader(text), "canary.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var log strings.Builder
	res, err := Run(context.Background(), cfg, Options{OutDir: out, Log: &log, Command: []string{"transferlab", "run", "--otel", "http://u:OTELSECRET-42@h:1"}})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "NOT launched or pinned by transferlab") ||
		!strings.Contains(res.Warnings[0], "sha256:0123abcd") || !strings.Contains(res.Warnings[0], "child-sim/1") {
		t.Errorf("first warning does not say the servers were not launched by transferlab, with their pins: %q", res.Warnings)
	}
	info, _ := res.Manifest.Server["production"].(map[string]any)
	if info["launched_by_transferlab"] != false || info["model"] != sim.DefaultConfig().Model.Name {
		t.Errorf("manifest.server.production = %v", info)
	}

	// The production server also served the baseline's A/A replicate: its
	// truth holds the requests of whichever of the two ran last.
	baseArm := "production"
	for _, k := range res.RunOrder {
		if k.Repetition == lastRep && (k.Arm == "production" || k.Arm == report.AAArm("production")) {
			baseArm = k.Arm
		}
	}
	truthBase := truthE2E(t, prod, key, measuredIDs(t, out, baseArm))
	want := map[string]string{"canary-faster": "pass", "canary-slower": "fail"}
	// A cell flagged client-bound is one whose client may have set the pace
	// (the run says so and leaves it out of the verdict): its latencies carry
	// the loaded host's delays, so the 2 % agreement with the truth is asked
	// only of arms none of whose cells, or the baseline's, is flagged.
	flagged := map[string]bool{}
	for _, c := range res.Cells {
		flagged[c.Arm] = flagged[c.Arm] || c.ClientBound
	}
	for arm, url := range map[string]string{"canary-faster": fast, "canary-slower": slow} {
		measured := meanE2E(t, out, arm) / meanE2E(t, out, baseArm)
		truth := truthE2E(t, url, key, measuredIDs(t, out, arm)) / truthBase
		// The truth is the simulators' own clock (arrival to last write);
		// the client stamps the same requests on its side of the sockets.
		// On an oversubscribed host (more runnable threads than cores, as
		// under CI's parallel race-detector packages) both sides are
		// descheduled at random, so the agreement asked is 5 %, not 2 %.
		tol, loaded := 0.02, hostOversubscribed()
		if loaded != "" {
			tol = 0.05
		}
		if rel := measured/truth - 1; math.Abs(rel) > tol {
			if flagged[arm] || flagged[baseArm] {
				t.Logf("%s: measured E2E ratio %.4f, the simulators' truth %.4f: %.1f %% apart, with a client-bound cell of %s or %s", arm, measured, truth, 100*rel, arm, baseArm)
			} else {
				t.Errorf("%s: measured E2E ratio %.4f, the simulators' truth %.4f: %.1f %% apart, want within %.0f %% %s", arm, measured, truth, 100*rel, 100*tol, loaded)
			}
		} else if loaded != "" && math.Abs(rel) > 0.02 {
			t.Logf("%s: measured E2E ratio %.4f, the simulators' truth %.4f: %.1f %% apart %s", arm, measured, truth, 100*rel, loaded)
		}
		if (want[arm] == "pass") != (truth < 1) {
			if loaded != "" {
				// The simulators' real-time steps were stretched by the
				// host's stalls more than by the override: the verdict
				// follows what the servers did, which no override predicts.
				t.Logf("%s: truth ratio %.4f %s: the override did not set the servers' pace; verdict not checked", arm, truth, loaded)
				continue
			}
			t.Fatalf("%s: truth ratio %.4f does not predict %s: the test's overrides are wrong", arm, truth, want[arm])
		}
		var v *report.Verdict
		for i := range res.Verdicts {
			if res.Verdicts[i].Candidate == arm {
				v = &res.Verdicts[i]
			}
		}
		if v != nil && v.Outcome == "inconclusive" && strings.Contains(v.Reason, "every load was excluded from the verdict") {
			// A loaded machine flags cells client-bound, and those feed no
			// verdict: the run must say which, and no figure it refused may
			// decide. (Their ratio carries the host's delays, a bias no
			// interval over requests or repetitions covers: logged.)
			if !flagged[arm] && !flagged[baseArm] {
				t.Errorf("%s: inconclusive for excluded loads, but no cell of %s or %s is client-bound: %+v", arm, arm, baseArm, v)
			}
			for _, q := range res.Stats.Ratios {
				if q.Candidate == arm && q.Metric == "e2e" && q.Stat == "mean" {
					if q.Excluded == "" {
						t.Errorf("%s: verdict excluded every load, but the ratio at %v req/s says nothing excluded it: %+v", arm, q.OfferedLoadRPS, q)
					}
					t.Logf("%s: client-bound, ratio %+v (truth %.4f): %s", arm, q.Value, truth, q.Excluded)
				}
			}
			continue
		}
		if v == nil || v.Outcome != want[arm] {
			t.Errorf("%s: verdict %+v, want %s (truth ratio %.4f)", arm, v, want[arm], truth)
		}
	}
	grepTree(t, out, key, "URLPASS-777", "OTELSECRET-42")
	if strings.Contains(log.String(), key) || strings.Contains(log.String(), "URLPASS-777") {
		t.Errorf("the log holds a secret:\n%s", log.String())
	}
}

// TestEndpointFailsBeforeMeasuring: a missing environment variable, an
// unreachable URL and refused credentials (on the model list, or on
// completions only) each stop the run before anything is measured or
// written, with an error that says which.
func TestEndpointFailsBeforeMeasuring(t *testing.T) {
	const key = "sk-fail-SECRET-1234"
	locked := startChildSim(t, []string{"TL_CHILD_KEY=" + key}, "--require-key")
	gateway := startChildSim(t, []string{"TL_CHILD_KEY=" + key}, "--require-key", "--open-models")
	closed, err := integrate.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfgText := func(url, header string) string {
		return fmt.Sprintf(`
name: fail
trace: {path: ../configs/traces/prefill-heavy-4000in-8out.csv}
load: {rates_rps: [1], duration: 1s}
server: {kind: endpoint, endpoint: {url: %q}}
request: {headers: {Authorization: %q}}
arms: [{name: baseline}]
`, url, header)
	}
	t.Setenv("TL_TEST_KEY", "sk-wrong-key-5555")
	for _, tc := range []struct {
		name, url, header string
		want              []string
	}{
		{"missing env var", locked, "Bearer ${TL_UNSET_VARIABLE}", []string{"config fail.yaml: request.headers.Authorization (line 6): ${TL_UNSET_VARIABLE}", "not set"}},
		{"unreachable", "http://127.0.0.1:" + strconv.Itoa(closed), "Bearer ${TL_TEST_KEY}", []string{"arm baseline", "unreachable", "connection refused"}},
		{"401", locked, "Bearer ${TL_TEST_KEY}", []string{"arm baseline", "refused the credentials", "401", "Authorization (values not shown)"}},
		{"401 on completions only", gateway, "Bearer ${TL_TEST_KEY}", []string{"arm baseline", "refused the credentials on a completion: POST /v1/completions (max_tokens 1", "401", "Authorization (values not shown)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(strings.NewReader(cfgText(tc.url, tc.header)), "fail.yaml", ".")
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			res, err := Run(context.Background(), cfg, Options{OutDir: out, Log: &strings.Builder{}})
			if err == nil || res != nil {
				t.Fatalf("Run = %v, %v; want an error and no results", res, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "sk-wrong-key-5555") {
				t.Errorf("the error quotes the key: %v", err)
			}
			if _, serr := os.Stat(out); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("output folder created: %v", serr)
			}
		})
	}
}

// TestConfigEndpointAndCommandErrors: the endpoint and command blocks'
// mistakes are config errors naming the field and saying why.
func TestConfigEndpointAndCommandErrors(t *testing.T) {
	for _, tc := range []struct{ server, arms, want string }{
		{`{kind: endpoint}`, `[{name: baseline}]`, "required when server.endpoint.url is not set"},
		{`{kind: endpoint, endpoint: {url: "localhost:8000"}}`, `[{name: baseline}]`, "server.endpoint.url"},
		{`{kind: endpoint, endpoint: {url: "http://h:8000/v1"}}`, `[{name: baseline}]`, "without /v1"},
		{`{kind: endpoint, endpoint: {url: "http://h"}}`, `[{name: baseline}, {name: c, override: {target: "m:C.f", mode: capture}}]`, "no hook can be put into it"},
		{`{kind: sim}`, `[{name: baseline, endpoint: {url: "http://h"}}]`, "only server.kind endpoint takes a per-arm URL"},
		{`{kind: command}`, `[{name: baseline}]`, "required when kind is command"},
		{`{kind: command, command: {argv: [x], stop_signal: SIGSTOP}}`, `[{name: baseline}]`, "command.stop_signal"},
		{`{kind: sim, command: {argv: [x]}}`, `[{name: baseline}]`, `set, but server.kind is "sim"`},
	} {
		text := fmt.Sprintf("trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: %s\narms: %s\n", tc.server, tc.arms)
		_, err := Parse(strings.NewReader(text), "x.yaml", ".")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("server %s arms %s: error %v, want %q", tc.server, tc.arms, err, tc.want)
		}
	}
	text := "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: sim}\nrequest: {headers: {\"Bad Name\": x, X-Key: \"a\\r\\nInjected: 1\"}}\narms: [{name: baseline}]\n"
	_, err := Parse(strings.NewReader(text), "x.yaml", ".")
	if err == nil || !strings.Contains(err.Error(), "request.headers.Bad Name") || !strings.Contains(err.Error(), "request.headers.X-Key") || strings.Contains(err.Error(), "Injected") {
		t.Errorf("bad headers: %v", err)
	}
}

// execPy is a Python program that execs argv[1:]: a Python server's start-up
// (sitecustomize, hence the hook's install receipt) followed by the
// serve-sim stand-in in the same process.
const execPy = "import os, sys; os.execv(sys.argv[1], sys.argv[1:])"

func commandConfig(t *testing.T, pyFlag, extra string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	argv := []string{py}
	if pyFlag != "" {
		argv = append(argv, pyFlag)
	}
	argv = append(argv, "-c", execPy, os.Args[0], childSimArg, "--addr", "{host}:{port}", "--require-key")
	b, _ := json.Marshal(argv)
	return fmt.Sprintf(`
name: command-test
trace: {path: ../configs/traces/prefill-heavy-4000in-8out.csv}
load: {rates_rps: [3], duration: 1s}
server:
  kind: command
  command:
    argv: %s
    env: {TL_CHILD_KEY: "${TL_TEST_KEY}"}
    ready_timeout: 20s
    stop_signal: SIGINT
    stop_grace: 5s
    manifest_argv: [%s, --version]
request:
  headers: {Authorization: "Bearer ${TL_TEST_KEY}"}
arms:
  - name: baseline
  - name: hooked
    override: {name: enc, target: "json.encoder:JSONEncoder.encode", mode: capture}
%s`, b, py, extra)
}

// TestCommandServer launches a serve-sim stand-in through server.kind
// command, started by a Python so the kernel-override hook loads in it: the
// arm with an override shows the hook's install receipt, the API key
// (expanded from the environment into the server's env and the request
// headers) reaches the server and appears in no file, and manifest_argv's
// output is recorded. A Python that ignores PYTHONPATH (-I) never loads the
// hook: the run stops when that arm starts, keeping the baseline's cells.
func TestCommandServer(t *testing.T) {
	if testing.Short() {
		t.Skip("launches servers and replays in real time; skipped under -short")
	}
	const key = "sk-command-SECRET-4321"
	t.Setenv("TL_TEST_KEY", key)
	cfg, err := Parse(strings.NewReader(commandConfig(t, "", "")), "command.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var log strings.Builder
	res, err := Run(context.Background(), cfg, Options{OutDir: out, Log: &log})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	for _, c := range res.Cells {
		for st, n := range c.States {
			if (st == "ok") != (n > 0) {
				t.Errorf("arm %s: states %v: the key did not reach the server", c.Arm, c.States)
				break
			}
		}
	}
	if res.Hook == nil || len(res.Hook.Arms) != 1 || res.Hook.Arms[0].Arm != "hooked" ||
		!strings.Contains(strings.Join(res.Hook.Arms[0].Receipts, "\n"), "override enc, target json.encoder:JSONEncoder.encode, mode capture, installed true") {
		t.Errorf("hook section: %+v", res.Hook)
	}
	info, _ := res.Manifest.Server["hooked"].(map[string]any)
	if m, ok := info["manifest_argv"].(*integrate.ManifestOutput); !ok || m.ExitCode != 0 || !strings.HasPrefix(m.Output, "Python 3") {
		t.Errorf("manifest_argv output: %#v", info["manifest_argv"])
	}
	if info["launched_by_transferlab"] != true || info["model"] != sim.DefaultConfig().Model.Name {
		t.Errorf("manifest.server.hooked = %v", info)
	}
	if d, ok := info["description"].(servers.Description); !ok || d.CompletionCheck == nil || d.CompletionCheck.Status != http.StatusOK ||
		d.CompletionCheck.MaxTokens != 1 || d.CompletionCheck.Counted {
		t.Errorf("manifest.server.hooked.description: %#v; want the completion check, answered 200, not counted", info["description"])
	}
	grepTree(t, out, key)

	t.Run("hook not loaded", func(t *testing.T) {
		cfg, err := Parse(strings.NewReader(commandConfig(t, "-I", "")), "command.yaml", ".")
		if err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		res, err := Run(context.Background(), cfg, Options{OutDir: out, Log: &strings.Builder{}})
		if !errors.Is(err, integrate.ErrHookNotLoaded) || !strings.Contains(err.Error(), "arm hooked") {
			t.Fatalf("err = %v, want the hooked arm refused with ErrHookNotLoaded", err)
		}
		if res == nil || res.Complete || len(res.Cells) != 1 || res.Cells[0].Arm != "baseline" {
			t.Errorf("results: %+v; want the baseline's cell kept, incomplete", res)
		}
	})
}

// TestCommandNeverReady: a launched server that never becomes ready ends
// the run at its start-up, before anything is measured, with an error
// saying so and quoting its log.
func TestCommandNeverReady(t *testing.T) {
	text := fmt.Sprintf(`
trace: {path: ../configs/traces/prefill-heavy-4000in-8out.csv}
load: {rates_rps: [1], duration: 1s}
server:
  kind: command
  command: {argv: [%q, %s, --addr, "{host}:{port}", --never-ready], ready_timeout: 1500ms}
arms: [{name: baseline}]
`, os.Args[0], childSimArg)
	cfg, err := Parse(strings.NewReader(text), "never.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Log: &strings.Builder{}})
	if !errors.Is(err, integrate.ErrNotReady) || !strings.Contains(err.Error(), "child sim serving on") {
		t.Fatalf("err = %v, want ErrNotReady quoting the server's log", err)
	}
	if res != nil && len(res.Cells) != 0 {
		t.Errorf("cells measured: %d", len(res.Cells))
	}
}

// TestRecordsSinkScrubs: a record's error text (a server's answer may echo
// the key) is scrubbed before records.jsonl, and for the sinks after it.
func TestRecordsSinkScrubs(t *testing.T) {
	var sc secret.Scrubber
	sc.Add("sk-echoed-SECRET-11")
	var buf strings.Builder
	s := &recordsSink{JSONLSink: loadgen.NewJSONLSink(&buf), scrub: &sc}
	keep := &loadgen.SliceSink{}
	rec := &loadgen.Record{RequestID: 1, State: loadgen.StateHTTPError, Error: `HTTP 401: {"error":"bad key sk-echoed-SECRET-11"} from http://u:pw@h/v1`}
	if err := loadgen.MultiSink(s, keep).Add(rec); err != nil {
		t.Fatal(err)
	}
	for _, got := range []string{buf.String(), keep.Records[0].Error} {
		if strings.Contains(got, "sk-echoed-SECRET-11") || strings.Contains(got, "u:pw") || !strings.Contains(got, "REDACTED") {
			t.Errorf("not scrubbed: %s", got)
		}
	}
}

// TestEndpointTLS: an https endpoint with a private CA is refused on the
// system roots alone and reached with request.tls.ca_file; insecure_skip_verify
// reaches it too and the run's first line says verification was off.
func TestEndpointTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"data":[{"id":"m1"}]}`)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := func(tlsBlock string) (map[string]servers.Target, *Config, error) {
		text := fmt.Sprintf("trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: endpoint, endpoint: {url: %q}}\nrequest: {tls: %s}\narms: [{name: baseline}]\n", srv.URL, tlsBlock)
		cfg, err := Parse(strings.NewReader(text), "tls.yaml", ".")
		if err != nil {
			t.Fatal(err)
		}
		l, err := resolveLive(cfg, os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		got, err := probeEndpoints(context.Background(), cfg, l)
		return got, cfg, err
	}
	if _, err := probeEndpoints(context.Background(), &Config{Server: ServerConfig{Kind: servers.Endpoint, Endpoint: &EndpointConfig{URL: srv.URL}}, Arms: []ArmConfig{{Name: "baseline"}}}, &live{scrub: &secret.Scrubber{}}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("system roots only: %v, want a certificate error", err)
	}
	if got, _, err := probe(fmt.Sprintf("{ca_file: %q}", ca)); err != nil || got[srv.URL].Model != "m1" {
		t.Errorf("with ca_file: %v, %v", got, err)
	}
	got, cfg, err := probe("{insecure_skip_verify: true}")
	if err != nil || got[srv.URL].Model != "m1" {
		t.Errorf("insecure: %v, %v", got, err)
	}
	if n := serverNotice(cfg, got); !strings.Contains(n, "NOT verified") {
		t.Errorf("notice %q does not say verification was off", n)
	}
}

// hostOversubscribed says "(host oversubscribed: load average N on M
// cores)" when /proc/loadavg's 1-minute figure exceeds the cores this
// process may use, "" otherwise or where /proc/loadavg cannot be read.
func hostOversubscribed() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	l, err := strconv.ParseFloat(f[0], 64)
	if err != nil || l <= float64(runtime.NumCPU()) {
		return ""
	}
	return fmt.Sprintf("(host oversubscribed: load average %.1f on %d cores)", l, runtime.NumCPU())
}
