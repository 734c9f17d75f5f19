package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// JSONLSink writes one JSON Record per line, one Write call per record as it
// is added, so every ended request is in the kernel's hands (a crash of the
// process loses nothing already added). A line is whole or absent: a write
// that fails part-way (a full disk) is truncated back when the writer has
// Truncate and Seek, as *os.File does. It is not safe for concurrent use;
// Replay calls Add from one goroutine at a time.
type JSONLSink struct {
	w     io.Writer
	buf   bytes.Buffer
	enc   *json.Encoder
	close func() error
	name  string
	n     int
	off   int64 // bytes of whole lines written
}

// rewinder is a file a cut line can be taken back from (*os.File is one).
type rewinder interface {
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
}

var _ Sink = (*JSONLSink)(nil)

// NewJSONLSink writes records to w; Close does not close w.
func NewJSONLSink(w io.Writer) *JSONLSink {
	s := &JSONLSink{w: w, name: "records"}
	s.enc = json.NewEncoder(&s.buf)
	return s
}

// CreateJSONL creates (truncates) the file at path and returns a sink that
// owns it: Close syncs and closes the file.
func CreateJSONL(path string) (*JSONLSink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("loadgen: records file: %w", err)
	}
	s := NewJSONLSink(f)
	s.name = path
	s.close = func() error {
		return errors.Join(f.Sync(), f.Close())
	}
	return s, nil
}

// Add implements Sink: it encodes r and writes the line.
func (s *JSONLSink) Add(r *Record) error {
	s.buf.Reset()
	if err := s.enc.Encode(r); err != nil {
		return fmt.Errorf("loadgen: %s: encoding request %d: %w", s.name, r.RequestID, err)
	}
	if n, err := s.w.Write(s.buf.Bytes()); err != nil {
		// A line is whole or absent: a write cut short (a full disk) is
		// taken back when the writer can truncate.
		if n > 0 {
			if rw, ok := s.w.(rewinder); !ok {
				err = fmt.Errorf("%w (the file may end in a cut line: its writer cannot truncate)", err)
			} else if terr := rw.Truncate(s.off); terr != nil {
				err = fmt.Errorf("%w (the cut line could not be removed: %w)", err, terr)
			} else if _, serr := rw.Seek(s.off, io.SeekStart); serr != nil {
				err = fmt.Errorf("%w (the cut line could not be removed: %w)", err, serr)
			}
		}
		return fmt.Errorf("loadgen: %s: writing request %d (line %d): %w", s.name, r.RequestID, s.n+1, err)
	}
	s.n++
	s.off += int64(s.buf.Len())
	return nil
}

// Lines is the number of whole record lines written so far.
func (s *JSONLSink) Lines() int { return s.n }

// Close implements Sink; it closes the file only when the sink created it.
func (s *JSONLSink) Close() error {
	if s.close == nil {
		return nil
	}
	c := s.close
	s.close = nil
	if err := c(); err != nil {
		return fmt.Errorf("loadgen: closing %s: %w", s.name, err)
	}
	return nil
}

// maxRecordLine bounds one JSONL line when reading (bytes).
const maxRecordLine = 256 << 20

// ReadRecordsFile is ReadRecords of the file at path; errors name it.
func ReadRecordsFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := ReadRecords(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// ReadRecords reads records written by JSONLSink. Blank lines are skipped;
// an undecodable line or an unknown state is an error naming its line.
func ReadRecords(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxRecordLine)
	var out []Record
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return out, fmt.Errorf("loadgen: records line %d: %w", line, err)
		}
		if !slices.Contains(States, rec.State) {
			return out, fmt.Errorf("loadgen: records line %d: field state: unknown state %q", line, rec.State)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("loadgen: reading records: %w", err)
	}
	return out, nil
}
