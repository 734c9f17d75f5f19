package loadgen

import "errors"

// SliceSink keeps a copy of every record in memory, in the order they ended.
type SliceSink struct {
	Records []Record
}

var _ Sink = (*SliceSink)(nil)

// Add implements Sink.
func (s *SliceSink) Add(r *Record) error {
	s.Records = append(s.Records, *r)
	return nil
}

// Close implements Sink; it does nothing.
func (s *SliceSink) Close() error { return nil }

// multiSink fans each record out to several sinks.
type multiSink []Sink

var _ Sink = multiSink(nil)

// MultiSink returns a sink that adds each record to every sink in order,
// returning the first error (later sinks still get the record).
func MultiSink(sinks ...Sink) Sink { return multiSink(sinks) }

// Add implements Sink.
func (m multiSink) Add(r *Record) error {
	var errs []error
	for _, s := range m {
		if err := s.Add(r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close implements Sink: it closes every sink and joins their errors.
func (m multiSink) Close() error {
	var errs []error
	for _, s := range m {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
