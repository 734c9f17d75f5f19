package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// burstGPTTrace writes a BurstGPT log of n good rows one second apart with a
// failed request (0 response tokens) after every fourth, the last logged with
// 0 request tokens too, and one malformed row; it returns the path.
func burstGPTTrace(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,ChatGPT,%d,%d,0,Conversation log\n", i, 20+i, 4+i%3)
		if i%4 == 3 {
			fmt.Fprintf(&b, "%d.5,ChatGPT,%d,0,0,API log\n", i, (i+1)%8*10)
		}
	}
	b.WriteString("oops,ChatGPT,5,5,10,API log\n")
	p := filepath.Join(t.TempDir(), "burst.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunAccountsForEveryTraceRow: a BurstGPT log whose failed requests are
// dropped by the default policy and whose malformed row is skipped
// (lenient) says so in the console, results.json and both reports; with
// keep_failed the failed requests (one with 0 request tokens) are replayed.
func TestRunAccountsForEveryTraceRow(t *testing.T) {
	t.Parallel()
	path := burstGPTTrace(t, 8) // 8 good rows, 2 failed (lines 6 and 11), malformed line 12
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep_failed=%v", keep), func(t *testing.T) {
			t.Parallel()
			cfgText := fmt.Sprintf(`
name: accounting-test
seed: 1
trace: {path: %s, lenient: true, keep_failed: %v}
load: {rates_rps: [4], warmup: 0s, duration: 1s}
server: {kind: sim}
arms:
  - name: baseline
energy: {disabled: true}
`, path, keep)
			_, res, out, log := runText(t, "a.yaml", cfgText)
			var onDisk struct {
				Trace map[string]any `json:"trace"`
			}
			b, err := os.ReadFile(filepath.Join(out, ResultsFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &onDisk); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"rows_read": 11.0, "skipped_rows": 1.0, "rows": 8.0, "skipped_lines": []any{12.0}}
			text := "8 replayed of 11 read; 1 skipped as malformed (line 12); 2 dropped by policy (burstgpt_failed=2)"
			if keep {
				want["rows"] = 10.0
				text = "10 replayed of 11 read; 1 skipped as malformed (line 12)"
			} else {
				want["dropped_by_reason"] = map[string]any{"burstgpt_failed": 2.0}
			}
			for k, v := range want {
				if fmt.Sprint(onDisk.Trace[k]) != fmt.Sprint(v) {
					t.Errorf("results.json trace.%s = %v, want %v", k, onDisk.Trace[k], v)
				}
			}
			var summary bytes.Buffer
			PrintSummary(&summary, res)
			md, _ := os.ReadFile(filepath.Join(out, MarkdownFile))
			html, _ := os.ReadFile(filepath.Join(out, HTMLFile))
			for name, got := range map[string]string{"log": log.String(), "console summary": summary.String(), "report.md": string(md), "report.html": string(html)} {
				if !strings.Contains(got, text) {
					t.Errorf("%s does not account for the trace's rows as %q:\n%s", name, text, got)
				}
			}
			if keep && res.Trace.Rows != 10 {
				t.Errorf("keep_failed replayed %d rows, want 10", res.Trace.Rows)
			}
		})
	}
}

// TestConfigSyntaxErrorLine: an indentation mistake on the quickstart's
// load.warmup line is reported there, not at the comment yaml.v3 names.
func TestConfigSyntaxErrorLine(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../configs/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	bad := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "  warmup: ") {
			lines[i], bad = l[1:], i+1
		}
	}
	if bad < 0 {
		t.Fatal("quickstart.yaml has no `  warmup: ` line")
	}
	_, err = Parse(strings.NewReader(strings.Join(lines, "\n")), "q.yaml", "../configs")
	if want := fmt.Sprintf("(line %d): did not find expected key", bad); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

// tinyRun is a one-cell simulated run of the quickstart's trace.
const tinyRun = `
name: tiny
seed: 2
trace: {path: ../configs/traces/AzureLLMInferenceTrace_conv-head2000.csv, clamp_context: 2048}
load: {rates_rps: [4], warmup: 0s, duration: 1s}
server: {kind: sim}
arms:
  - name: baseline
energy: {disabled: true}
resolution: {aa_replicate: false}
`

func runInto(t *testing.T, cfgText, out string, opt Options) (*report.Results, error) {
	t.Helper()
	cfg, err := Parse(strings.NewReader(cfgText), "tiny.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	opt.OutDir = out
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	return Run(context.Background(), cfg, opt)
}

// TestRunNeverWritesThroughSymlinks: a link in the output folder, dangling
// or to a file elsewhere, at any name the run writes, is refused before
// anything is measured, and its target is left as it was.
func TestRunNeverWritesThroughSymlinks(t *testing.T) {
	t.Parallel()
	for _, name := range []string{RecordsFile, ResultsFile, ResultsFile + ".tmp", MarkdownFile, HTMLFile, ServersDir, LockFile} {
		for _, dangling := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s dangling=%v", name, dangling), func(t *testing.T) {
				t.Parallel()
				out, elsewhere := t.TempDir(), t.TempDir()
				target := filepath.Join(elsewhere, "victim")
				if !dangling {
					if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Symlink(target, filepath.Join(out, name)); err != nil {
					t.Fatal(err)
				}
				res, err := runInto(t, tinyRun, out, Options{})
				if err == nil || res != nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "symbolic link") {
					t.Fatalf("run through a link at %s: results %v, error %v; want refused naming it", name, res != nil, err)
				}
				b, rerr := os.ReadFile(target)
				if dangling && rerr == nil {
					t.Errorf("the dangling link's target was created: %q", b)
				}
				if !dangling && string(b) != "keep me" {
					t.Errorf("the link's target now holds %q", b)
				}
			})
		}
	}
}

// TestStaleLockDoesNotBlock: a lock left by a run whose process is gone
// (same host) is taken over; one held by a live process, or written on
// another host, still refuses the folder.
func TestStaleLockDoesNotBlock(t *testing.T) {
	t.Parallel()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("no `true` to make a dead process: %v", err)
	}
	host, _ := os.Hostname()
	for _, tc := range []struct {
		name string
		lock string
		ok   bool
	}{
		{"dead pid, this host", lockText(dead.Process.Pid, host, time.Now()), true},
		{"live pid, this host", lockText(os.Getpid(), host, time.Now()), false},
		{"dead pid, another host", lockText(dead.Process.Pid, host+"-elsewhere", time.Now()), false},
		{"unreadable lock", "garbage\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(tc.lock), 0o644); err != nil {
				t.Fatal(err)
			}
			unlock, err := lockOutDir(dir)
			if tc.ok != (err == nil) {
				t.Fatalf("lock %q: error %v, want ok=%v", tc.lock, err, tc.ok)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "in use") {
					t.Errorf("refusal %q does not say the folder is in use", err)
				}
				return
			}
			b, _ := os.ReadFile(filepath.Join(dir, LockFile))
			if !strings.Contains(string(b), fmt.Sprintf("pid %d ", os.Getpid())) {
				t.Errorf("lock after takeover holds %q, want this process", b)
			}
			unlock()
		})
	}
}

// fullDisk stands in for a file system that runs out of space once a total
// of budget bytes has been written across every file: the write that
// crosses it writes what fits and fails with ENOSPC, as write(2) does.
type fullDisk struct {
	mu     sync.Mutex
	budget int
}

type fullFile struct {
	*os.File
	d *fullDisk
}

func (d *fullDisk) wrap(f *os.File) outFile { return fullFile{f, d} }

func (f fullFile) Write(b []byte) (int, error) {
	f.d.mu.Lock()
	n := min(len(b), f.d.budget)
	f.d.budget -= n
	f.d.mu.Unlock()
	w, err := f.File.Write(b[:n])
	if err == nil && w < len(b) {
		err = &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return w, err
}

// TestRunOnFullDisk: whatever byte the disk fills at, every output file is
// whole or absent (records.jsonl: whole lines), no temporary file is left,
// and the error names exactly the files not written.
func TestRunOnFullDisk(t *testing.T) {
	t.Parallel()
	// The byte counts of a run with room for everything place the cuts.
	out := t.TempDir()
	if _, err := runInto(t, tinyRun, out, Options{}); err != nil {
		t.Fatal(err)
	}
	size := func(name string) int {
		st, err := os.Stat(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return int(st.Size())
	}
	rec, js := size(RecordsFile), size(ResultsFile)
	for _, tc := range []struct {
		name   string
		budget int
		failed []string
	}{
		{"in the first record", 10, []string{RecordsFile, ResultsFile, MarkdownFile, HTMLFile}},
		{"mid records", rec / 2, []string{RecordsFile, ResultsFile, MarkdownFile, HTMLFile}},
		{"mid results.json", rec + js/2, []string{ResultsFile, MarkdownFile, HTMLFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			res, err := runInto(t, tinyRun, dir, Options{wrap: (&fullDisk{budget: tc.budget}).wrap})
			if err == nil || res == nil {
				t.Fatalf("run on a full disk: results %v, error %v; want results and an error", res != nil, err)
			}
			if got := FilesNotWritten(err); !slices.Equal(got, tc.failed) {
				t.Errorf("files not written %v, want %v (error: %v)", got, tc.failed, err)
			}
			if !strings.Contains(err.Error(), "no space left on device") {
				t.Errorf("error %q does not say why", err)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				switch e.Name() {
				case RecordsFile:
					if len(b) > 0 && b[len(b)-1] != '\n' {
						t.Errorf("records.jsonl ends in a cut line: %q", b[max(0, len(b)-40):])
					}
					if _, err := loadgen.ReadRecords(bytes.NewReader(b)); err != nil {
						t.Errorf("records.jsonl: %v", err)
					}
				case ResultsFile:
					if _, err := report.ReadResults(filepath.Join(dir, e.Name())); err != nil {
						t.Errorf("results.json left unreadable: %v", err)
					}
				case MarkdownFile, HTMLFile:
					t.Errorf("%s left (%d bytes) though the disk was full before it", e.Name(), len(b))
				case ServersDir:
				case CellsFile:
					// Whole lines, or a cut last one that --resume ignores.
					if _, err := readCellsFile(filepath.Join(dir, e.Name())); err != nil && len(b) > 0 {
						t.Errorf("%s: %v", CellsFile, err)
					}
				default:
					t.Errorf("left in the folder: %s (%d bytes)", e.Name(), len(b))
				}
			}
		})
	}
}

// TestArmNamesAreSafe: an arm name becomes a folder under servers/ and a
// label in file names, so only a safe charset is accepted, at config load,
// as `field (line N): message`; nothing is written outside --out.
func TestArmNamesAreSafe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"cand", true}, {"rmsnorm-2.5x", true}, {"Triton_RMSNorm.v2", true},
		{"../../../../pwned-arm", false}, {"a/b", false}, {`a\\b`, false}, {"..", false}, {".hidden", false},
		{"-flag", false}, {"with space", false}, {"tab\\there", false}, {strings.Repeat("a", 65), false}, {"naïve", false},
	} {
		cfg := fmt.Sprintf("trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: sim}\narms:\n  - name: baseline\n  - name: \"%s\"\n", tc.name)
		_, err := Parse(strings.NewReader(cfg), "arms.yaml", ".")
		if tc.ok != (err == nil) {
			t.Errorf("arm %q: error %v, want ok=%v", tc.name, err, tc.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "arms[1].name (line 6): ") {
			t.Errorf("arm %q: error %q lacks `arms[1].name (line 6): `", tc.name, err)
		}
	}
}

// TestOneConfigErrorFormat: the cost block and amdahl.profile report their
// problems like every other block, each as `field (line N): message`.
func TestOneConfigErrorFormat(t *testing.T) {
	t.Parallel()
	const cfg = "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: reference, reference: {}}\narms: [{name: baseline}]\n" +
		"cost:\n  price_per_gpu_hour: -3\n  currency: usd\n  price_usd: 2\n" +
		"amdahl:\n  profile: {windo: 1s, s_timing: cuda}\n"
	_, err := Parse(strings.NewReader(cfg), "test.yaml", ".")
	if err == nil {
		t.Fatal("no error")
	}
	msg := strings.TrimPrefix(err.Error(), "config test.yaml: ")
	for _, want := range []string{
		"cost.price_usd (line 8): unknown key", "cost.price_per_gpu_hour (line 6): must be", "cost.currency (line 7): must be",
		"amdahl.profile.windo (line 10): unknown key", "amdahl.profile.s_timing (line 10): ",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	format := regexp.MustCompile(`^[a-z_][a-z0-9_.\[\]]* \(line \d+\): \S`)
	for _, line := range strings.Split(msg, "\n") {
		if !format.MatchString(line) {
			t.Errorf("not `field (line N): message`: %q", line)
		}
	}
}
