package shard

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/transferlab/transferlab/traces"
)

// Spec is one shard of a split run: Index of Count (0 ≤ Index < Count).
type Spec struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ParseSpec reads "i/N" (0 ≤ i < N), as `run --shard` takes it.
func ParseSpec(s string) (Spec, error) {
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Spec{}, fmt.Errorf("shard %q: want i/N (e.g. 0/3)", s)
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if err1 != nil || err2 != nil {
		return Spec{}, fmt.Errorf("shard %q: want i/N with whole numbers (e.g. 0/3)", s)
	}
	sp := Spec{Index: i, Count: n}
	return sp, sp.Validate()
}

// Validate checks 0 ≤ Index < Count.
func (s Spec) Validate() error {
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard %d/%d: want 0 ≤ i < N", s.Index, s.Count)
	}
	return nil
}

func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Slice is the shard's part of one cell's schedule (traces.Shard). A shard
// left with no request is an error: the run would measure nothing.
func (s Spec) Slice(sched traces.Schedule) (traces.Schedule, error) {
	out, err := traces.Shard(sched, s.Index, s.Count)
	if err != nil {
		return traces.Schedule{}, err
	}
	if len(out.Requests) == 0 {
		return traces.Schedule{}, fmt.Errorf("shard %s: the schedule has %d requests, none for this shard: use fewer shards", s, len(sched.Requests))
	}
	return out, nil
}
