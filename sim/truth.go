package sim

import (
	"sync"
	"sync/atomic"
	"time"
)

// RequestTruth is what really happened to one request inside the simulator,
// keyed by its X-Request-Id. Every time is a time.Now() reading (monotonic
// clock included), so differences between them are exact elapsed times.
type RequestTruth struct {
	// ID is the X-Request-Id header value.
	ID string `json:"id"`
	// InputTokens is the prompt length as counted (token ids, or words of a string prompt).
	InputTokens int `json:"input_tokens"`
	// MaxTokens is the number of tokens the request asked for (and gets).
	MaxTokens int `json:"max_tokens"`
	// Stream is true for an SSE response.
	Stream bool `json:"stream"`
	// ArrivedAt is when the handler was entered (before the body was read).
	ArrivedAt time.Time `json:"arrived_at"`
	// AdmittedAt is when the scheduler took the request off the queue (the
	// real time its first step was planned): the end of queueing.
	AdmittedAt time.Time `json:"admitted_at"`
	// PrefillStartStep and PrefillEndStep are the indices of the engine steps
	// that ran the first and the last prompt chunk (equal unless chunked); -1 before.
	PrefillStartStep int64 `json:"prefill_start_step"`
	PrefillEndStep   int64 `json:"prefill_end_step"`
	// TokenGeneratedAt holds, per generated token, the real end of the engine
	// step that produced it (index 0 is the prefill's last step).
	TokenGeneratedAt []time.Time `json:"token_generated_at"`
	// TokenFlushedAt holds, per token event, the time right after the event
	// was written and flushed to the response (for non-streaming responses, all
	// equal to the time the body was flushed).
	TokenFlushedAt []time.Time `json:"token_flushed_at"`
	// DoneAt is when the response's last bytes ([DONE], or the JSON body) were
	// flushed, or when the request was aborted; zero while in flight.
	DoneAt time.Time `json:"done_at"`
	// Aborted is true when the request ended before all its tokens were written
	// (client gone, server closing).
	Aborted bool `json:"aborted"`
}

// QueueDelay is AdmittedAt − ArrivedAt (0 if not admitted).
func (t RequestTruth) QueueDelay() time.Duration {
	if t.AdmittedAt.IsZero() {
		return 0
	}
	return t.AdmittedAt.Sub(t.ArrivedAt)
}

// TTFT is the true time to first token: first token event flushed − ArrivedAt.
// ok is false when no token was flushed.
func (t RequestTruth) TTFT() (d time.Duration, ok bool) {
	if len(t.TokenFlushedAt) == 0 {
		return 0, false
	}
	return t.TokenFlushedAt[0].Sub(t.ArrivedAt), true
}

// ITLs are the true gaps between successive token events' flush times
// (len(TokenFlushedAt) − 1 of them).
func (t RequestTruth) ITLs() []time.Duration {
	if len(t.TokenFlushedAt) < 2 {
		return nil
	}
	out := make([]time.Duration, len(t.TokenFlushedAt)-1)
	for i := 1; i < len(t.TokenFlushedAt); i++ {
		out[i-1] = t.TokenFlushedAt[i].Sub(t.TokenFlushedAt[i-1])
	}
	return out
}

// E2E is DoneAt − ArrivedAt; ok is false while in flight.
func (t RequestTruth) E2E() (d time.Duration, ok bool) {
	if t.DoneAt.IsZero() {
		return 0, false
	}
	return t.DoneAt.Sub(t.ArrivedAt), true
}

// truthRecord is one request's truth, written by the engine and the handler.
// Token times are kept as int64 ns offsets from the store's base reading (8 B
// a token instead of 24) and turned back into time.Time by snapshot;
// base.Add keeps the monotonic reading, so differences stay exact.
type truthRecord struct {
	mu      sync.Mutex
	gen     uint64    // store generation, for eviction
	base    time.Time // the store's creation time (monotonic)
	t       RequestTruth
	genNs   []int64 // per token: step end − base
	flushNs []int64 // per token: flush − base
}

func (r *truthRecord) snapshot() RequestTruth {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.t
	t.TokenGeneratedAt = r.times(r.genNs)
	t.TokenFlushedAt = r.times(r.flushNs)
	return t
}

func (r *truthRecord) times(ns []int64) []time.Time {
	out := make([]time.Time, len(ns))
	for i, d := range ns {
		out[i] = r.base.Add(time.Duration(d))
	}
	return out
}

// truthStore keeps at most capacity records, dropping the oldest; a new
// request with an id already present replaces it (latest wins).
type truthStore struct {
	mu       sync.Mutex
	base     time.Time
	capacity int
	byID     map[string]*truthRecord
	ring     []ringSlot // insertion order, circular
	head     int        // next slot to write
	gen      atomic.Uint64
}

type ringSlot struct {
	id  string
	gen uint64
}

func newTruthStore(capacity int) *truthStore {
	return &truthStore{base: time.Now(), capacity: capacity, byID: make(map[string]*truthRecord), ring: make([]ringSlot, capacity)}
}

// add registers a new record for id (never nil; "" ids are not stored but still get a record).
func (s *truthStore) add(id string, init RequestTruth) *truthRecord {
	r := &truthRecord{gen: s.gen.Add(1), base: s.base, t: init}
	r.t.PrefillStartStep, r.t.PrefillEndStep = -1, -1
	r.t.TokenGeneratedAt, r.t.TokenFlushedAt = nil, nil
	// pre-sized so that recording a token does not allocate (16 B a token).
	r.genNs = make([]int64, 0, init.MaxTokens)
	r.flushNs = make([]int64, 0, init.MaxTokens)
	if id == "" {
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.ring[s.head]
	if old.id != "" {
		if cur, ok := s.byID[old.id]; ok && cur.gen == old.gen {
			delete(s.byID, old.id)
		}
	}
	s.ring[s.head] = ringSlot{id: id, gen: r.gen}
	s.head = (s.head + 1) % s.capacity
	s.byID[id] = r
	return r
}

func (s *truthStore) get(id string) (RequestTruth, bool) {
	s.mu.Lock()
	r, ok := s.byID[id]
	s.mu.Unlock()
	if !ok {
		return RequestTruth{}, false
	}
	return r.snapshot(), true
}

func (s *truthStore) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.byID)
	clear(s.ring)
	s.head = 0
}
