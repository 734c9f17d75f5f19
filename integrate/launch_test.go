package integrate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/transferlab/transferlab/internal/secret"
)

// The test binary doubles as the fake server: with INTEGRATE_FAKE_SERVER set,
// TestMain runs fakeServer instead of the tests.
const fakeEnv = "INTEGRATE_FAKE_SERVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		fakeServer(mode)
		return
	}
	goleak.VerifyTestMain(m)
}

// fakeServer behaves as the mode says; the port is in FAKE_PORT.
func fakeServer(mode string) {
	port := os.Getenv("FAKE_PORT")
	fmt.Println("fake server starting, mode", mode)
	switch mode {
	case "exit-early":
		fmt.Println("loading model... CUDA error: out of memory")
		os.Exit(1)
	case "hook-fail":
		fmt.Fprintln(os.Stderr, hookStartupMarker+", refusing to run: override x: target m:C.f: module 'm' not found")
		os.Exit(hookExitCode)
	case "child":
		// A worker in the same process group, as servers that spawn workers have.
		c := exec.Command("sleep", "300")
		if err := c.Start(); err != nil {
			fmt.Println("cannot start child:", err)
			os.Exit(1)
		}
		_ = os.WriteFile(os.Getenv("FAKE_CHILD_PID_FILE"), []byte(strconv.Itoa(c.Process.Pid)), 0o644)
	case "echo-secret":
		// A server that logs its environment, as some print their arguments.
		fmt.Println("starting with api key", os.Getenv("FAKE_SECRET"), "at https://user:"+os.Getenv("FAKE_SECRET")+"@host/")
		fmt.Fprint(os.Stderr, "partial line without newline: "+os.Getenv("FAKE_SECRET"))
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	}
	health := http.StatusOK
	if mode == "never-ready" {
		health = http.StatusServiceUnavailable
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(health) })
	mux.HandleFunc("/manifest", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"server":"fake","versions":{"torch":"none"}}`)
	})
	mux.HandleFunc("/hook/stats", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"receipt":{"pid":1},"overrides":[{"name":"n","target":"m:C.f","mode":"on","installed":true,`+
			`"calls":{"eager":3,"capture":65,"compiling":0},"calls_total":68,"served_by":{"candidate":68,"original":0},`+
			`"shapes":[{"args":[{"shape":[1,4,8]}],"count":3}]}]}`)
	})
	// GET /crash makes the server die as a real one can mid-run (after it was ready).
	mux.HandleFunc("/crash", func(http.ResponseWriter, *http.Request) {
		fmt.Println("Segmentation fault in the generation loop")
		os.Exit(139)
	})
	if err := http.ListenAndServe("127.0.0.1:"+port, mux); err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
}

func fakeSpec(t *testing.T, mode string, extraEnv ...string) Spec {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{
		Argv:         []string{exe, "-test.run=^$"},
		Env:          append([]string{fakeEnv + "=" + mode, "FAKE_PORT=" + strconv.Itoa(port)}, extraEnv...),
		LogPath:      filepath.Join(t.TempDir(), "server.log"),
		Port:         port,
		ReadyTimeout: 30 * time.Second, // generous: CI machines are loaded; no test waits this long on success
		Grace:        5 * time.Second,
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// waitGone polls until pid no longer exists (a zombie reaped by init counts as gone).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pid %d still alive after teardown", pid)
}

func TestLaunchReadyAndClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, err := Launch(ctx, fakeSpec(t, "ok"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.BaseURL(), "http://127.0.0.1:") || strings.HasSuffix(p.BaseURL(), "/") {
		t.Errorf("BaseURL = %q", p.BaseURL())
	}
	if err := p.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
	m, err := p.Manifest(ctx)
	if err != nil || m["server"] != "fake" {
		t.Errorf("Manifest = %v, %v", m, err)
	}
	hs, err := p.HookStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o := hs.Override(""); o == nil || o.Calls["capture"] != 65 || o.ServedBy["candidate"] != 68 {
		t.Errorf("HookStats = %+v", hs)
	}
	if err := p.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Close")
	}
	if err := p.Err(); err != nil {
		t.Errorf("Err after Close = %v, want nil (we asked for the exit)", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	waitGone(t, p.PID())
}

func TestLaunchFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		mode     string
		timeout  time.Duration
		want     error
		wantText string
	}{
		// The log's tail must reach the caller, or nobody can tell why it died.
		{name: "exits before ready", mode: "exit-early", want: ErrExited, wantText: "CUDA error: out of memory"},
		{name: "hook refuses to start", mode: "hook-fail", want: ErrTargetNotFound, wantText: "module 'm' not found"},
		{name: "never ready", mode: "never-ready", timeout: 5 * time.Second, want: ErrNotReady,
			wantText: "fake server starting"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := fakeSpec(t, tc.mode)
			if tc.timeout > 0 {
				spec.ReadyTimeout = tc.timeout
			}
			p, err := Launch(context.Background(), spec)
			if err == nil {
				_ = p.Close(context.Background())
				t.Fatal("Launch succeeded")
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v does not wrap %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error does not quote the log (%q): %v", tc.wantText, err)
			}
		})
	}
}

func TestLaunchContextCancelledKillsServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	spec := fakeSpec(t, "never-ready")
	go func() {
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	_, err := Launch(ctx, spec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCrashMidRun(t *testing.T) {
	t.Parallel()
	p, err := Launch(context.Background(), fakeSpec(t, "ok"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if p.Err() != nil {
		t.Fatalf("Err while running = %v", p.Err())
	}
	if resp, err := http.Get(p.BaseURL() + "/crash"); err == nil {
		resp.Body.Close()
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done not closed after the server crashed")
	}
	err = p.Err()
	if !errors.Is(err, ErrExited) {
		t.Fatalf("Err = %v, want ErrExited", err)
	}
	if !strings.Contains(err.Error(), "Segmentation fault") || !strings.Contains(err.Error(), "died") {
		t.Errorf("Err does not say what happened: %v", err)
	}
}

func TestCloseTearsDownGroup(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		mode string
	}{
		{name: "worker child in the group", mode: "child"},
		// SIGTERM ignored: Close must fall back to SIGKILL after Grace.
		{name: "ignores SIGTERM", mode: "ignore-term"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "child.pid")
			spec := fakeSpec(t, tc.mode, "FAKE_CHILD_PID_FILE="+pidFile)
			spec.Grace = 300 * time.Millisecond
			p, err := Launch(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			child := 0
			if tc.mode == "child" {
				b, err := os.ReadFile(pidFile)
				if err != nil {
					t.Fatal(err)
				}
				child, _ = strconv.Atoi(string(b))
				if !alive(child) {
					t.Fatal("child not running before Close")
				}
			}
			if err := p.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			waitGone(t, p.PID())
			if child != 0 {
				waitGone(t, child)
			}
		})
	}
}

func TestSpecValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		spec Spec
		want string
	}{
		{"no argv", Spec{LogPath: "x", Port: 1}, "spec.argv"},
		{"no log", Spec{Argv: []string{"x"}, Port: 1}, "spec.log_path"},
		{"bad port", Spec{Argv: []string{"x"}, LogPath: "x", Port: 70000}, "spec.port"},
		{"bad env", Spec{Argv: []string{"x"}, LogPath: "x", Port: 1, Env: []string{"NOEQUALS"}}, "spec.env[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Launch(context.Background(), tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want mention of %s", err, tc.want)
			}
		})
	}
}

func TestMergeEnv(t *testing.T) {
	t.Parallel()
	got := mergeEnv([]string{"A=1", "B=2"}, []string{"B=3", "C=4"})
	want := []string{"A=1", "B=3", "C=4"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("mergeEnv = %v, want %v", got, want)
	}
}

// A server's own log passes through the run's scrubber: what it prints of a
// secret never reaches server.log, also on stderr and in a last line with no
// newline.
func TestLaunchLogIsScrubbed(t *testing.T) {
	t.Parallel()
	const key = "sk-LOGSECRET-4242"
	spec := fakeSpec(t, "echo-secret", "FAKE_SECRET="+key)
	spec.LogScrub = &secret.Scrubber{}
	spec.LogScrub.Add(key)
	p, err := Launch(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(spec.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "LOGSECRET") {
		t.Fatalf("server.log holds the secret:\n%s", b)
	}
	for _, want := range []string{"starting with api key " + secret.Redacted, "partial line without newline: " + secret.Redacted, "fake server starting"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("server.log lacks %q:\n%s", want, b)
		}
	}
}
