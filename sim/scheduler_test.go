package sim

import (
	"reflect"
	"testing"
)

// runSteps plans and commits n steps, returning each step's shape (copied).
func runSteps(s *scheduler, n int) []StepShape {
	var out []StepShape
	for range n {
		p := s.next()
		if p.empty() {
			break
		}
		out = append(out, StepShape{
			Prefill:        append([]PrefillChunk(nil), p.shape.Prefill...),
			DecodeContexts: append([]int(nil), p.shape.DecodeContexts...),
		})
		s.commit(p, func(*seq, int) {})
	}
	return out
}

func TestScheduler(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cfg   SchedulerConfig
		seqs  [][2]int // input, max tokens
		steps int
		want  []StepShape
	}{
		{
			name: "chunked prefill under the token budget, decode first",
			cfg:  SchedulerConfig{MaxBatchTokens: 2048, MaxNumSeqs: 8},
			seqs: [][2]int{{1500, 2}, {1500, 2}},
			want: []StepShape{
				{Prefill: []PrefillChunk{{NewTokens: 1500, Completes: true}, {NewTokens: 548}}},
				{Prefill: []PrefillChunk{{NewTokens: 952, PastTokens: 548, Completes: true}}, DecodeContexts: []int{1501}},
				{DecodeContexts: []int{1501}},
			},
		},
		{
			name: "max_num_seqs caps the batch; FCFS admission when a slot frees",
			cfg:  SchedulerConfig{MaxBatchTokens: 100, MaxNumSeqs: 1},
			seqs: [][2]int{{10, 2}, {20, 1}},
			want: []StepShape{
				{Prefill: []PrefillChunk{{NewTokens: 10, Completes: true}}},
				{DecodeContexts: []int{11}},
				{Prefill: []PrefillChunk{{NewTokens: 20, Completes: true}}},
			},
		},
		{
			name: "KV capacity reserves prompt+max_tokens; no overtaking",
			cfg:  SchedulerConfig{MaxBatchTokens: 100, MaxNumSeqs: 8, KVCacheTokens: 30},
			seqs: [][2]int{{10, 2}, {25, 1}, {1, 1}},
			want: []StepShape{
				{Prefill: []PrefillChunk{{NewTokens: 10, Completes: true}}},
				{DecodeContexts: []int{11}},
				{Prefill: []PrefillChunk{{NewTokens: 25, Completes: true}, {NewTokens: 1, Completes: true}}},
			},
		},
		{
			name: "decodes use the token budget first; admission waits for budget",
			cfg:  SchedulerConfig{MaxBatchTokens: 2, MaxNumSeqs: 8},
			seqs: [][2]int{{1, 3}, {1, 3}, {1, 3}},
			want: []StepShape{
				{Prefill: []PrefillChunk{{NewTokens: 1, Completes: true}, {NewTokens: 1, Completes: true}}},
				{DecodeContexts: []int{2, 2}},
				{DecodeContexts: []int{3, 3}},
				{Prefill: []PrefillChunk{{NewTokens: 1, Completes: true}}},
				{DecodeContexts: []int{2}},
				{DecodeContexts: []int{3}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScheduler(tc.cfg)
			for _, sq := range tc.seqs {
				s.enqueue(&seq{inputTokens: sq[0], maxTokens: sq[1]})
			}
			got := runSteps(s, 100)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("steps:\n got %+v\nwant %+v", got, tc.want)
			}
			if s.busy() || s.kvUsed != 0 {
				t.Errorf("after the run: busy=%v kvUsed=%d", s.busy(), s.kvUsed)
			}
		})
	}
}

func TestSchedulerTokensAndAbort(t *testing.T) {
	t.Parallel()
	s := newScheduler(SchedulerConfig{MaxBatchTokens: 64, MaxNumSeqs: 4, KVCacheTokens: 1000})
	a := &seq{inputTokens: 10, maxTokens: 5}
	b := &seq{inputTokens: 10, maxTokens: 5}
	s.enqueue(a)
	s.enqueue(b)
	got := map[*seq][]int{}
	for range 2 {
		p := s.next()
		s.commit(p, func(q *seq, n int) { got[q] = append(got[q], n) })
	}
	if !reflect.DeepEqual(got[a], []int{1, 2}) {
		t.Errorf("a tokens %v, want [1 2]", got[a])
	}
	s.abort(a)
	if s.kvUsed != 15 || len(s.running) != 1 {
		t.Errorf("after abort: kvUsed %d running %d, want 15 and 1", s.kvUsed, len(s.running))
	}
	for s.busy() {
		s.commit(s.next(), func(q *seq, n int) { got[q] = append(got[q], n) })
	}
	if !reflect.DeepEqual(got[b], []int{1, 2, 3, 4, 5}) || len(got[a]) != 2 {
		t.Errorf("tokens a %v b %v", got[a], got[b])
	}
	waiting := &seq{inputTokens: 1, maxTokens: 1}
	s.enqueue(waiting)
	s.abort(waiting)
	if s.busy() {
		t.Error("aborted waiting request still queued")
	}
}
