package sim

import "time"

// seqState is where a sequence is in its life.
type seqState int

const (
	seqWaiting  seqState = iota // queued, not admitted
	seqPrefill                  // admitted, prompt not fully processed
	seqDecode                   // generating
	seqFinished                 // all tokens generated, or aborted
)

// seq is one request inside the engine. Fields under "scheduler" belong to
// the scheduler (engine lock); the rest is shared with the HTTP handler.
type seq struct {
	inputTokens int
	maxTokens   int
	arrived     time.Time // handler entry; a step admitting it starts no earlier

	// scheduler
	state     seqState
	prefilled int // prompt tokens in the KV cache
	generated int // tokens generated
	chunk     int // prompt tokens planned in the current step
	kv        int // KV tokens reserved (prompt + max_tokens) while admitted

	// shared with the handler
	stream *tokenStream
}

// plannedStep is what the scheduler decided for one step.
type plannedStep struct {
	index   int64
	prefill []*seq // sequences with a prompt chunk (chunk tokens) this step
	decode  []*seq // sequences decoding one token this step
	shape   StepShape
}

func (p *plannedStep) empty() bool { return len(p.prefill) == 0 && len(p.decode) == 0 }

// scheduler is the continuous-batching policy, free of clocks and goroutines
// so that the real-time engine and Capacity's virtual-time run share it.
//
// Each step (vLLM V1-like): every decoding sequence takes one token of the
// budget, in admission order; then unfinished prefills continue; then waiting
// requests are admitted first-come-first-served while a sequence slot, budget
// and (if bounded) KV capacity for prompt + max_tokens remain. A prompt longer
// than the budget left is chunked.
type scheduler struct {
	cfg     SchedulerConfig
	waiting []*seq
	running []*seq // admission order
	kvUsed  int
	steps   int64
	plan    plannedStep // reused every step
}

func newScheduler(cfg SchedulerConfig) *scheduler {
	return &scheduler{cfg: cfg}
}

func (s *scheduler) enqueue(q *seq) {
	q.state = seqWaiting
	s.waiting = append(s.waiting, q)
}

// busy reports whether any sequence is waiting or running.
func (s *scheduler) busy() bool { return len(s.waiting) > 0 || len(s.running) > 0 }

// next plans one step. A sequence admitted in it has prefilled == 0 and is in
// plan.prefill. The returned plan is valid until the next call.
func (s *scheduler) next() *plannedStep {
	p := &s.plan
	p.prefill = p.prefill[:0]
	p.decode = p.decode[:0]
	p.shape.Prefill = p.shape.Prefill[:0]
	p.shape.DecodeContexts = p.shape.DecodeContexts[:0]
	budget := s.cfg.MaxBatchTokens
	for _, q := range s.running {
		if q.state == seqDecode && budget > 0 {
			budget--
			p.decode = append(p.decode, q)
			// the token fed in is the last generated one; attention reads it too.
			p.shape.DecodeContexts = append(p.shape.DecodeContexts, q.inputTokens+q.generated)
		}
	}
	for _, q := range s.running {
		if q.state == seqPrefill && budget > 0 {
			budget -= s.addChunk(p, q, budget)
		}
	}
	for len(s.waiting) > 0 && budget > 0 && len(s.running) < s.cfg.MaxNumSeqs {
		q := s.waiting[0]
		need := q.inputTokens + q.maxTokens
		if s.cfg.KVCacheTokens > 0 && s.kvUsed+need > s.cfg.KVCacheTokens {
			break // FCFS: no overtaking
		}
		s.waiting[0] = nil
		s.waiting = s.waiting[1:]
		s.kvUsed += need
		q.kv = need
		q.state = seqPrefill
		s.running = append(s.running, q)
		budget -= s.addChunk(p, q, budget)
	}
	if !p.empty() {
		p.index = s.steps
		s.steps++
	}
	return p
}

func (s *scheduler) addChunk(p *plannedStep, q *seq, budget int) int {
	n := min(q.inputTokens-q.prefilled, budget)
	q.chunk = n
	p.prefill = append(p.prefill, q)
	p.shape.Prefill = append(p.shape.Prefill, PrefillChunk{
		NewTokens:  n,
		PastTokens: q.prefilled,
		Completes:  q.prefilled+n == q.inputTokens,
	})
	return n
}

// commit applies the step's results: each decoding sequence and each sequence
// whose prompt completed gets one token; token receives each such sequence
// with its new count. Finished sequences leave the batch and release their KV.
func (s *scheduler) commit(p *plannedStep, token func(q *seq, generated int)) {
	for _, q := range p.decode {
		if q.state != seqDecode {
			continue // aborted during the step
		}
		q.generated++
		token(q, q.generated)
	}
	for _, q := range p.prefill {
		if q.state != seqPrefill {
			continue
		}
		q.prefilled += q.chunk
		q.chunk = 0
		if q.prefilled == q.inputTokens {
			q.state = seqDecode
			q.generated = 1
			token(q, 1)
		}
	}
	s.sweep()
}

// abort takes q out wherever it is (client gone, engine stopping).
func (s *scheduler) abort(q *seq) {
	switch q.state {
	case seqWaiting:
		for i, w := range s.waiting {
			if w == q {
				s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
				break
			}
		}
		q.state = seqFinished
	case seqPrefill, seqDecode:
		q.state = seqFinished
		s.sweep()
	}
}

// sweep drops finished sequences from the running set and frees their KV.
func (s *scheduler) sweep() {
	keep := s.running[:0]
	for _, q := range s.running {
		if q.state == seqDecode && q.generated >= q.maxTokens {
			q.state = seqFinished
		}
		if q.state == seqFinished {
			s.kvUsed -= q.kv
			q.kv = 0
		} else {
			keep = append(keep, q)
		}
	}
	for i := len(keep); i < len(s.running); i++ {
		s.running[i] = nil
	}
	s.running = keep
}

// drain aborts every sequence (engine shutdown) and returns them.
func (s *scheduler) drain() []*seq {
	all := append(append([]*seq(nil), s.running...), s.waiting...)
	for _, q := range all {
		s.abort(q)
	}
	s.running, s.waiting = nil, nil
	return all
}
