package loadgen

// Sink is where records go: a JSONL file, a slice, histograms, a progress line.
// Add is called once per finished request, from one goroutine at a time.
type Sink interface {
	Add(r *Record) error
	Close() error
}
