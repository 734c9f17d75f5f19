package loadgen

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/transferlab/transferlab/loadgen/loadgentest"
)

// recordingObserver keeps what an Observer is told.
type recordingObserver struct {
	mu    sync.Mutex
	began bool
	head  map[int]time.Duration
	first map[int]time.Duration
	order []string // per request: "head" before "first"
}

func (o *recordingObserver) Began(time.Time) { o.mu.Lock(); o.began = true; o.mu.Unlock() }
func (o *recordingObserver) Head(id int, sentAt time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.began || o.first[id] != 0 {
		o.order = append(o.order, "head out of order")
	}
	o.head[id] = sentAt
}
func (o *recordingObserver) FirstToken(id int, at time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.first[id]; ok {
		o.order = append(o.order, "two first tokens")
	}
	o.first[id] = at
}

// TestObserverSeesHeadAndFirstToken: on both transports, an Observer is
// told, once per request and in order, of its head (with the SentAt its
// record keeps) and of its first token (at the record's first event).
func TestObserverSeesHeadAndFirstToken(t *testing.T) {
	t.Parallel()
	for _, tr := range []Transport{TransportReactor, TransportNetHTTP} {
		if tr == TransportReactor && !reactorSupported {
			continue
		}
		srv := startFast(t, loadgentest.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
		o := &recordingObserver{head: map[int]time.Duration{}, first: map[int]time.Duration{}}
		var sink SliceSink
		s := schedule(6, 2*time.Millisecond, 8, 3)
		if _, err := Replay(context.Background(), srv, s, nil, &sink, WithTransport(tr), WithObserver(o)); err != nil {
			t.Fatal(err)
		}
		if len(o.order) > 0 {
			t.Errorf("%s: %v", tr, o.order)
		}
		for _, r := range sink.Records {
			if h, ok := o.head[r.RequestID]; !ok || h != r.SentAt {
				t.Errorf("%s: request %d: head told %v (%v), record SentAt %v", tr, r.RequestID, h, ok, r.SentAt)
			}
			if f, ok := o.first[r.RequestID]; !ok || len(r.Events) == 0 || f != r.Events[0].At {
				t.Errorf("%s: request %d: first token told %v (%v), record events %v", tr, r.RequestID, f, ok, r.Events)
			}
		}
	}
}
