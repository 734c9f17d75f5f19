package loadgen

import "time"

// Observer is told, while a replay runs, what a request's Record says only
// once the request ends: that its response head arrived (the request was
// written at sentAt, its Record.SentAt) and when its first token arrived
// (at, the time its Record's first token event will carry). Times are
// offsets from the run's start, which Began gives first. A capacity
// probe's fail-fast uses it: a request sent longer ago than the TTFT
// target with no token yet is over that target whatever comes next.
// Methods are called from the transport's goroutines (the reactor's event
// loop among them): they must be quick and safe for concurrent use.
type Observer interface {
	Began(start time.Time)
	Head(id int, sentAt time.Duration)
	FirstToken(id int, at time.Duration)
}

// WithObserver tells o of each request's response head and first token as
// they arrive (default nil: nobody is told).
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// observeHead tells the observer, if any, that rec's response head (status
// 200) arrived.
func (c *config) observeHead(rec *Record) {
	if c.observer != nil {
		c.observer.Head(rec.RequestID, rec.SentAt)
	}
}

// token logs a token event, telling the observer, if any, of the first.
func (st *streamRead) token(e TokenEvent) {
	if st.evs.n == 0 && st.c.cfg.observer != nil {
		st.c.cfg.observer.FirstToken(st.rec.RequestID, e.At)
	}
	st.evs.add(e)
}
