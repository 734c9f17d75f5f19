package integrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// HookStats is what the hook reports from inside the server (GET /hook/stats):
// the per-process install receipt and, per override, call counters, captured
// signatures and shadow differences.
type HookStats struct {
	Receipt   *HookReceipt    `json:"receipt"`
	Overrides []OverrideStats `json:"overrides"`
	Notes     []string        `json:"notes"`
}

// HookReceipt proves which process installed which override.
type HookReceipt struct {
	PID       int             `json:"pid"`
	Argv      []string        `json:"argv"`
	Python    string          `json:"python"`
	Manifest  string          `json:"manifest"`
	Overrides json.RawMessage `json:"overrides"`
}

// OverrideStats are one override's counters.
type OverrideStats struct {
	Name            string `json:"name"`
	Target          string `json:"target"`
	Mode            string `json:"mode"`
	Candidate       string `json:"candidate"`
	CandidateSHA256 string `json:"candidate_sha256"`
	KernelPrefix    string `json:"kernel_prefix"`
	Installed       bool   `json:"installed"`
	InstallError    string `json:"install_error"`
	// Calls counts Python-level calls of the target by phase: "eager", "capture"
	// (while a CUDA graph was being captured; each replay of that graph then runs
	// the captured kernels without calling Python) and "compiling" (torch.compile traces).
	Calls      map[string]int `json:"calls"`
	CallsTotal int            `json:"calls_total"`
	// ServedBy counts calls answered by the candidate and by the original.
	ServedBy map[string]int `json:"served_by"`
	// Shapes are the distinct signatures seen (capture/shadow mode), most frequent first.
	Shapes []json.RawMessage `json:"shapes"`
	Shadow struct {
		CallsRequested int            `json:"calls_requested"`
		CallsDone      int            `json:"calls_done"`
		Worst          map[string]any `json:"worst"`
	} `json:"shadow"`
	TimingsFile     string `json:"timings_file"`
	BypassSuspected bool   `json:"bypass_suspected"`
}

// Override returns the stats of the override called name ("" = the first), or nil.
func (h *HookStats) Override(name string) *OverrideStats {
	for i := range h.Overrides {
		if name == "" || h.Overrides[i].Name == name {
			return &h.Overrides[i]
		}
	}
	return nil
}

// ProfileWindow is what /profile/stop returns: the Chrome trace written by the
// server's torch profiler and the window's wall and active time (s).
type ProfileWindow struct {
	TracePath    string  `json:"trace_path"`
	WindowS      float64 `json:"window_s"`
	ActiveS      float64 `json:"active_s"`
	RequestsDone int     `json:"requests_done"`
	TraceBytes   int64   `json:"trace_bytes"`
	// HookTimings, when the hook is loaded with timings on, is the array of
	// transferlab.hook_timings/v1 documents (amdahl.ParseHookTimingsAll) the
	// server read as it closed a timing window at the profiler's start
	// ("before-profile") and just before it stopped ("profile"): the hook's
	// CUDA-event target time over the profiled calls. Absent otherwise.
	HookTimings json.RawMessage `json:"hook_timings,omitempty"`
}

func (p *Process) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.baseURL+path, rd)
	if err != nil {
		return err
	}
	for k, v := range p.spec.Headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("integrate: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("integrate: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("integrate: %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("integrate: %s %s: decoding: %w", method, path, err)
	}
	return nil
}

// Manifest returns the server's pinning manifest (GET /manifest): versions of
// torch, transformers, triton, CUDA and the driver, GPU name, model config,
// dtype, weights, engine configuration (requested and effective), code hash and
// the hook's install receipt.
func (p *Process) Manifest(ctx context.Context) (map[string]any, error) {
	var m map[string]any
	return m, p.call(ctx, http.MethodGet, "/manifest", nil, &m)
}

// HookStats returns the hook's counters from inside the server (GET /hook/stats).
func (p *Process) HookStats(ctx context.Context) (*HookStats, error) {
	var h HookStats
	if err := p.call(ctx, http.MethodGet, "/hook/stats", nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// HookWindow closes the hook's current CUDA-event timing window with label and
// returns the timings documents (amdahl/HOOK_TIMINGS.md), one per override.
func (p *Process) HookWindow(ctx context.Context, label string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	return out, p.call(ctx, http.MethodPost, "/hook/window", map[string]string{"label": label}, &out)
}

// ProfileStart opens a torch-profiler window (CPU and CUDA activity) in the
// server; ProfileStop closes it and writes the Chrome trace to tracePath (a path
// on the server's machine).
func (p *Process) ProfileStart(ctx context.Context, tracePath string) error {
	var out map[string]any
	return p.call(ctx, http.MethodPost, "/profile/start", map[string]any{"trace_path": tracePath}, &out)
}

// ProfileStop closes the profiler window opened by ProfileStart.
func (p *Process) ProfileStop(ctx context.Context) (ProfileWindow, error) {
	var w ProfileWindow
	return w, p.call(ctx, http.MethodPost, "/profile/stop", struct{}{}, &w)
}

// CandidateRan says whether the hook's counters prove the candidate served
// calls in this server, and if not, why. Calls counted during CUDA-graph capture
// count: every replay of the captured graph then runs the candidate's kernels.
// A candidate that was installed but never called after the server handled
// requests was bypassed (torch.compile decomposing an op, a fused path that
// never reaches the target): that arm's measurement is of the baseline.
func (o *OverrideStats) CandidateRan() (bool, string) {
	switch {
	case o.Mode != ModeOn:
		return false, fmt.Sprintf("mode %s: the candidate does not serve", o.Mode)
	case !o.Installed:
		return false, "override not installed: " + o.InstallError
	case o.ServedBy["candidate"] == 0 && o.Calls["compiling"] > 0:
		return false, fmt.Sprintf("bypassed: %d calls were torch.compile traces and none ran the candidate", o.Calls["compiling"])
	case o.ServedBy["candidate"] == 0:
		return false, "bypassed or unreached: installed, but the target was never called"
	}
	return true, fmt.Sprintf("candidate served %d calls (%d eager, %d during CUDA-graph capture)",
		o.ServedBy["candidate"], o.Calls["eager"], o.Calls["capture"])
}
