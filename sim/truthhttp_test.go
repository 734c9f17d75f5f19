package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// getTruth reads GET /v1/truth into its lines.
func getTruth(t *testing.T, c *http.Client, base string) []TruthLine {
	t.Helper()
	resp, err := c.Get(base + TruthPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("GET %s: status %d, content-type %q", TruthPath, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []TruthLine
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var l TruthLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("%s line %d: %v: %s", TruthPath, n, err, sc.Bytes())
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTruth checks that l says what tr says: every time, as an offset from
// ArrivedNs, equals the same time's exact elapsed time from ArrivedAt.
func sameTruth(t *testing.T, l TruthLine, tr RequestTruth) {
	t.Helper()
	rel := func(ns int64) time.Duration { return time.Duration(ns - l.ArrivedNs) }
	if l.ID != tr.ID || l.InputTokens != tr.InputTokens || l.MaxTokens != tr.MaxTokens || l.Stream != tr.Stream || l.Aborted != tr.Aborted ||
		l.PrefillStartStep != tr.PrefillStartStep || l.PrefillEndStep != tr.PrefillEndStep {
		t.Errorf("%s: line %+v vs truth %+v", tr.ID, l, tr)
	}
	if len(l.TokenFlushedNs) != len(tr.TokenFlushedAt) || len(l.TokenGeneratedNs) != len(tr.TokenGeneratedAt) {
		t.Fatalf("%s: %d/%d flushed/generated times exported, truth has %d/%d", tr.ID, len(l.TokenFlushedNs), len(l.TokenGeneratedNs), len(tr.TokenFlushedAt), len(tr.TokenGeneratedAt))
	}
	for i, ns := range l.TokenFlushedNs {
		if got, want := rel(ns), tr.TokenFlushedAt[i].Sub(tr.ArrivedAt); got != want {
			t.Errorf("%s token %d flushed at arrival+%v exported, truth arrival+%v", tr.ID, i, got, want)
		}
	}
	for i, ns := range l.TokenGeneratedNs {
		if got, want := rel(ns), tr.TokenGeneratedAt[i].Sub(tr.ArrivedAt); got != want {
			t.Errorf("%s token %d generated at arrival+%v exported, truth arrival+%v", tr.ID, i, got, want)
		}
	}
	opt := func(what string, ns *int64, at time.Time) {
		switch {
		case at.IsZero() != (ns == nil):
			t.Errorf("%s %s: exported %v, truth zero=%t", tr.ID, what, ns, at.IsZero())
		case ns != nil && rel(*ns) != at.Sub(tr.ArrivedAt):
			t.Errorf("%s %s: arrival+%v exported, truth arrival+%v", tr.ID, what, rel(*ns), at.Sub(tr.ArrivedAt))
		}
	}
	opt("admitted_ns", l.AdmittedNs, tr.AdmittedAt)
	opt("done_ns", l.DoneNs, tr.DoneAt)
}

// TestTruthExport: GET /v1/truth gives every request the server holds, in
// arrival order, with the same times as Server.Truth (exactly, to the ns),
// as offsets on the server's clock from its creation; a request still in
// flight has done_ns null.
func TestTruthExport(t *testing.T) {
	t.Parallel()
	created := time.Now()
	s := newTestServer(t, fastConfig())
	c := newTestClient(t)
	ctx := context.Background()
	done := []struct {
		id            string
		input, tokens int
	}{{"a", 32, 4}, {"b", 100, 1}, {"c", 8, 9}}
	for _, r := range done {
		if res, err := postStream(ctx, c, s.BaseURL(), r.id, r.input, r.tokens); err != nil || res.tokenEvents != r.tokens {
			t.Fatalf("request %s: %v, %d token events", r.id, err, res.tokenEvents)
		}
	}
	resp, err := c.Post(s.BaseURL()+"/v1/completions", "application/json", bytes.NewReader([]byte(`{"prompt":[1,2,3],"max_tokens":3}`)))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()

	// One stream held in flight: 4,000 tokens take seconds (one engine step
	// of milliseconds each); read its first two events, export, then hang up.
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"prompt": idPrompt(16), "max_tokens": 4000, "stream": true})
	req, _ := http.NewRequestWithContext(fctx, http.MethodPost, s.BaseURL()+"/v1/completions", bytes.NewReader(body))
	req.Header.Set(requestIDHeader, "inflight")
	fresp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer fresp.Body.Close()
	if fresp.StatusCode != http.StatusOK {
		t.Fatalf("in-flight request: status %d", fresp.StatusCode)
	}
	// A token's flush time is stamped right after its Flush returns, so the
	// client can read an event before the server has stamped it; the server
	// writes event 2 only after stamping event 1, so once event 2 is read the
	// truth holds at least one flush.
	br := bufio.NewReader(fresp.Body)
	for events := 0; events < 2; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			events++
		}
	}

	lines := getTruth(t, c, s.BaseURL())
	upper := time.Since(created)
	ids := []string{"a", "b", "c", "inflight"} // the request without X-Request-Id is not kept
	if len(lines) != len(ids) {
		t.Fatalf("%d lines, want %d (%v)", len(lines), len(ids), lines)
	}
	for i, l := range lines {
		if l.ID != ids[i] {
			t.Errorf("line %d is %q, want %q (arrival order)", i, l.ID, ids[i])
		}
		if l.ArrivedNs <= 0 || time.Duration(l.ArrivedNs) > upper {
			t.Errorf("%s: arrived_ns %d outside (0, %d]: not an offset from the server's creation", l.ID, l.ArrivedNs, upper)
		}
		tr, ok := s.Truth(l.ID)
		if !ok {
			t.Fatalf("%s: exported but Server.Truth has none", l.ID)
		}
		if l.ID == "inflight" {
			if l.DoneNs != nil || len(l.TokenFlushedNs) == 0 {
				t.Errorf("in-flight request: done_ns %v, %d flushed, want null and ≥ 1", l.DoneNs, len(l.TokenFlushedNs))
			}
			// It moves on, so Server.Truth is a later snapshot: what was
			// exported must be a prefix of it, to the ns.
			if len(l.TokenFlushedNs) > len(tr.TokenFlushedAt) || len(l.TokenGeneratedNs) > len(tr.TokenGeneratedAt) {
				t.Fatalf("in-flight request: %d/%d flushed/generated times exported, a later Server.Truth has only %d/%d",
					len(l.TokenFlushedNs), len(l.TokenGeneratedNs), len(tr.TokenFlushedAt), len(tr.TokenGeneratedAt))
			}
			tr.TokenFlushedAt = tr.TokenFlushedAt[:len(l.TokenFlushedNs)]
			tr.TokenGeneratedAt = tr.TokenGeneratedAt[:len(l.TokenGeneratedNs)]
			tr.DoneAt, tr.Aborted = time.Time{}, false
			sameTruth(t, l, tr)
			continue
		}
		sameTruth(t, l, tr)
		if i > 0 && l.ArrivedNs < lines[i-1].ArrivedNs {
			t.Errorf("%s arrived_ns %d before the previous line's %d", l.ID, l.ArrivedNs, lines[i-1].ArrivedNs)
		}
	}
	if got := s.TruthLines(); len(got) != len(ids) {
		t.Errorf("TruthLines: %d, want %d", len(got), len(ids))
	}
	cancel()

	t.Run("GET only", func(t *testing.T) {
		resp, err := c.Post(s.BaseURL()+TruthPath, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: status %d, want 405", TruthPath, resp.StatusCode)
		}
	})
	t.Run("empty after ClearTruth", func(t *testing.T) {
		s.ClearTruth()
		if lines := getTruth(t, c, s.BaseURL()); len(lines) != 0 {
			t.Errorf("%d lines after ClearTruth, want 0", len(lines))
		}
	})
}
