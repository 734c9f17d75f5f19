package integrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/transferlab/transferlab/internal/outpath"
	"github.com/transferlab/transferlab/internal/secret"
	"github.com/transferlab/transferlab/loadgen"
)

// Defaults for Spec's zero fields.
const (
	// DefaultReadyPath is probed with GET until it answers 200.
	DefaultReadyPath = "/health"
	// DefaultReadyTimeout bounds start-up: model load, CUDA-graph capture and warm-up.
	DefaultReadyTimeout = 15 * time.Minute
	// DefaultGrace is how long Close waits after SIGTERM before SIGKILL.
	DefaultGrace = 15 * time.Second
	// DefaultHost is the address servers are told to bind and are probed on.
	DefaultHost = "127.0.0.1"
	// probeEvery is the readiness polling period.
	probeEvery = 250 * time.Millisecond
	// tailBytes is how much of the log an error message quotes.
	tailBytes = 4096
)

// ErrExited reports that the server process ended on its own (before it was
// ready, or in the middle of a run). Errors wrapping it carry the exit status and
// the log's tail.
var ErrExited = errors.New("server process exited")

// ErrNotReady reports that the readiness probe did not succeed before the deadline.
var ErrNotReady = errors.New("server not ready before the deadline")

// Spec says how to start one server process.
type Spec struct {
	// Argv is the program and its arguments, run directly (no shell). Required.
	Argv []string
	// Env holds KEY=VALUE pairs added to (and overriding) this process's environment.
	Env []string
	// Dir is the working directory ("" = the current one).
	Dir string
	// LogPath receives the process's stdout and stderr. Required.
	LogPath string
	// Host and Port are where the server listens; BaseURL is http://Host:Port.
	// Host defaults to DefaultHost; Port is required (see FreePort).
	Host string
	Port int
	// ReadyPath is probed with GET until it answers 200. Empty: DefaultReadyPath
	// (/health), falling back to /v1/models (either answering 200 is ready).
	ReadyPath string
	// ReadyTimeout bounds the wait for readiness (default DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// Grace is the wait between StopSignal and SIGKILL in Close (default DefaultGrace).
	Grace time.Duration
	// StopSignal names the signal Close sends first (one of StopSignals;
	// default SIGTERM).
	StopSignal string
	// HookDir, when set, is where the kernel-override hook writes its install
	// receipts: Launch refuses a ready server in which no receipt appeared,
	// or in which HookOverride (when set) is installed in no process
	// (ErrHookNotLoaded).
	HookDir      string
	HookOverride *Override
	// Headers are sent with the readiness probes and the client calls
	// (/manifest, /hook/stats): a server behind an API key
	// (vLLM --api-key guards /v1/models) needs them.
	Headers http.Header
	// LogScrub, when set, rewrites every line the process prints before it
	// reaches LogPath (header values, values expanded from the environment,
	// URL userinfo become REDACTED): a server that echoes its arguments or
	// environment (vLLM logs --api-key among its non-default args) must not
	// put a secret on disk. The output then passes through a pipe that a
	// goroutine drains line by line.
	LogScrub *secret.Scrubber
}

func (s Spec) withDefaults() Spec {
	if s.Host == "" {
		s.Host = DefaultHost
	}
	if s.ReadyTimeout <= 0 {
		s.ReadyTimeout = DefaultReadyTimeout
	}
	if s.Grace <= 0 {
		s.Grace = DefaultGrace
	}
	return s
}

func (s Spec) validate() error {
	var errs []error
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		errs = append(errs, errors.New("spec.argv: required"))
	}
	if s.LogPath == "" {
		errs = append(errs, errors.New("spec.log_path: required"))
	}
	if s.StopSignal != "" && !slices.Contains(StopSignals, s.StopSignal) {
		errs = append(errs, fmt.Errorf("spec.stop_signal: %q is not one of %s", s.StopSignal, strings.Join(StopSignals, ", ")))
	}
	if s.Port <= 0 || s.Port > 65535 {
		errs = append(errs, fmt.Errorf("spec.port: %d is not a TCP port", s.Port))
	}
	if s.ReadyPath != "" && !strings.HasPrefix(s.ReadyPath, "/") {
		errs = append(errs, fmt.Errorf("spec.ready_path: %q must start with /", s.ReadyPath))
	}
	for i, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			errs = append(errs, fmt.Errorf("spec.env[%d]: %q is not KEY=VALUE", i, kv))
		}
	}
	return errors.Join(errs...)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago (the OS
// picked it). Another process may take it before the server binds; Launch then
// fails with the server's own bind error in the log tail.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", DefaultHost+":0")
	if err != nil {
		return 0, fmt.Errorf("integrate: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Process is one launched server. It satisfies loadgen.Server.
type Process struct {
	spec    Spec
	cmd     *exec.Cmd
	log     *os.File        // closed by wait when drained is nil
	drained <-chan struct{} // the scrubbing goroutine closed the log
	baseURL string
	client  *http.Client
	done    chan struct{}

	mu       sync.Mutex
	waitErr  error
	closing  bool
	closeErr error
	closed   bool
}

var _ loadgen.Server = (*Process)(nil)

// Launch starts spec's process in its own process group, with stdout and stderr
// going to spec.LogPath, and returns once GET spec.ReadyPath answers 200. If the
// process exits first, the error wraps ErrExited (and ErrTargetNotFound when the
// kernel-override hook refused to start) and quotes the log's tail; if the
// deadline (spec.ReadyTimeout, or ctx) passes first, the process group is killed
// and the error wraps ErrNotReady or ctx's error. ctx bounds the start only: the
// process runs until Close.
func Launch(ctx context.Context, spec Spec) (*Process, error) {
	spec = spec.withDefaults()
	if err := spec.validate(); err != nil {
		return nil, fmt.Errorf("integrate: launch: %w", err)
	}
	logf, err := outpath.Create(spec.LogPath)
	if err != nil {
		return nil, fmt.Errorf("integrate: launch: log: %w", err)
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = mergeEnv(os.Environ(), spec.Env)
	out, drained, err := logSink(logf, spec.LogScrub)
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("integrate: launch: log: %w", err)
	}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.Stdin = nil
	setProcessGroup(cmd)
	err = cmd.Start()
	if out != logf {
		out.Close() // the child holds its own copy of the pipe's write end
	}
	if err != nil {
		if drained != nil {
			<-drained
		} else {
			logf.Close()
		}
		return nil, fmt.Errorf("integrate: launch %s: %w", spec.Argv[0], err)
	}
	p := &Process{
		spec:    spec,
		cmd:     cmd,
		log:     logf,
		drained: drained,
		baseURL: "http://" + net.JoinHostPort(spec.Host, strconv.Itoa(spec.Port)),
		client:  &http.Client{Timeout: 30 * time.Second},
		done:    make(chan struct{}),
	}
	go p.wait()
	rctx, cancel := context.WithTimeout(ctx, spec.ReadyTimeout)
	defer cancel()
	if err := p.waitReady(rctx); err != nil {
		_ = p.Close(context.Background())
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w after %v", ErrNotReady, spec.ReadyTimeout)
		}
		return nil, fmt.Errorf("integrate: %s (pid %d) did not become ready: %w; log %s ends:\n%s",
			spec.Argv[0], cmd.Process.Pid, err, spec.LogPath, p.LogTail(tailBytes))
	}
	if spec.HookDir != "" {
		ov := Override{Mode: ModeOff}
		if spec.HookOverride != nil {
			ov = *spec.HookOverride
		}
		if err := checkReceipts(spec.HookDir, ov); err != nil {
			_ = p.Close(context.Background())
			return nil, fmt.Errorf("integrate: %s (pid %d) is ready, but %w; log %s", spec.Argv[0], cmd.Process.Pid, err, spec.LogPath)
		}
	}
	return p, nil
}

func mergeEnv(base, extra []string) []string {
	idx := map[string]int{}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range append(append([]string{}, base...), extra...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

func (p *Process) wait() {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.waitErr = err
	p.mu.Unlock()
	// The log is whole before anyone reads its tail; a worker that outlived
	// the leader and still holds the pipe gets drainWait, then the group's
	// SIGKILL in Close ends it and the drain closes the log itself.
	if p.drained == nil {
		p.log.Close()
	} else {
		select {
		case <-p.drained:
		case <-time.After(drainWait):
		}
	}
	close(p.done)
}

// drainWait bounds how long an exited server's last lines are waited for.
const drainWait = 2 * time.Second

// logSink returns what the process's stdout and stderr are given: logf
// itself without a scrubber, else the write end of a pipe whose lines a
// goroutine scrubs into logf. drained (nil without a scrubber) is closed
// once the goroutine has closed logf (every writer gone).
func logSink(logf *os.File, scrub *secret.Scrubber) (*os.File, <-chan struct{}, error) {
	if scrub == nil {
		return logf, nil, nil
	}
	drained := make(chan struct{})
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	go func() {
		defer close(drained)
		w := scrub.Writer(logf)
		_, _ = io.Copy(w, pr)
		_ = w.Close()
		pr.Close()
		logf.Close()
	}()
	return pw, drained, nil
}

func (p *Process) waitReady(ctx context.Context) error {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		if err := p.Ready(ctx); err == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// exitError describes an exit the caller did not ask for.
func (p *Process) exitError() error {
	p.mu.Lock()
	werr := p.waitErr
	p.mu.Unlock()
	status := "status 0"
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		status = ee.ProcessState.String()
		code = ee.ExitCode()
	} else if werr != nil {
		status = werr.Error()
	}
	err := fmt.Errorf("%w (%s)", ErrExited, status)
	if code == hookExitCode && strings.Contains(p.LogTail(1<<16), hookStartupMarker) {
		err = fmt.Errorf("%w: %w", ErrTargetNotFound, err)
	}
	return err
}

// BaseURL is the OpenAI-compatible root, e.g. "http://127.0.0.1:8000", no trailing slash.
func (p *Process) BaseURL() string { return p.baseURL }

// PID is the server's process id (also its process group id).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// LogPath is the file holding the server's stdout and stderr.
func (p *Process) LogPath() string { return p.spec.LogPath }

// Ready returns nil once GET ReadyPath (or, with no ReadyPath, /health or
// /v1/models) answers 200, an error otherwise (it does not wait).
func (p *Process) Ready(ctx context.Context) error {
	select {
	case <-p.done:
		return p.exitError()
	default:
	}
	paths := defaultReadyPaths
	if p.spec.ReadyPath != "" {
		paths = []string{p.spec.ReadyPath}
	}
	var errs []error
	for _, path := range paths {
		err := p.get200(ctx, path)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// get200 returns nil when GET path answers 200 within 2 s.
func (p *Process) get200(ctx context.Context, path string) error {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, p.baseURL+path, nil)
	if err != nil {
		return err
	}
	for k, v := range p.spec.Headers {
		req.Header[k] = v
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}

// Spec is the spec the process was launched with (defaults filled in).
func (p *Process) Spec() Spec { return p.spec }

// Done is closed when the process has exited, for whatever reason.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is nil while the process runs and after an exit asked for by Close; after
// an exit of its own it wraps ErrExited with the status and the log's tail, so a
// run can end with a clear message and keep what it measured.
func (p *Process) Err() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	p.mu.Lock()
	closing := p.closing
	p.mu.Unlock()
	if closing {
		return nil
	}
	return fmt.Errorf("integrate: server pid %d died: %w; log %s ends:\n%s", p.PID(), p.exitError(),
		p.spec.LogPath, p.LogTail(tailBytes))
}

// Close ends the whole process group: Spec.StopSignal (SIGTERM), then SIGKILL once Grace has passed
// (or at once when ctx ends). It waits for the process to exit and is safe to
// call more than once. It returns an error only if the process could not be
// signalled or did not exit after SIGKILL.
func (p *Process) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		err := p.closeErr
		p.mu.Unlock()
		<-p.done
		return err
	}
	p.closed = true
	select {
	case <-p.done:
		// Exited on its own: Err keeps reporting that.
	default:
		p.closing = true
	}
	p.mu.Unlock()

	var err error
	select {
	case <-p.done:
	default:
		sig := p.spec.StopSignal
		if sig == "" {
			sig = "SIGTERM"
		}
		if serr := signalGroup(p.cmd, stopSignal(sig)); serr != nil && !isProcessDone(serr) {
			err = fmt.Errorf("integrate: %s to process group %d: %w", sig, p.PID(), serr)
		}
		t := time.NewTimer(p.spec.Grace)
		select {
		case <-p.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		select {
		case <-p.done:
		default:
			if kerr := signalGroup(p.cmd, sigKill); kerr != nil && !isProcessDone(kerr) {
				err = errors.Join(err, fmt.Errorf("integrate: SIGKILL to process group %d: %w", p.PID(), kerr))
			}
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				err = errors.Join(err, fmt.Errorf("integrate: process %d did not exit 10 s after SIGKILL", p.PID()))
			}
		}
	}
	// Children that outlived the leader (workers) still get the group's SIGKILL.
	_ = signalGroup(p.cmd, sigKill)
	p.client.CloseIdleConnections()
	p.mu.Lock()
	p.closeErr = err
	p.mu.Unlock()
	return err
}

// LogTail returns up to n bytes from the end of the log, starting at a line boundary.
func (p *Process) LogTail(n int) string {
	return fileTail(p.spec.LogPath, n)
}

func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	off := st.Size() - int64(n)
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	if off > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return string(buf)
}
