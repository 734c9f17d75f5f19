package loadgen

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// chunkReader returns one chunk per Read and advances a fake clock by 1 ms per
// Read, so an event's stamp names the read that completed it.
type chunkReader struct {
	chunks []string
	now    time.Duration
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	c.now += time.Millisecond
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

type gotEvent struct {
	name, data string
	at         time.Duration
}

func readAll(t *testing.T, chunks []string, bufSize int) ([]gotEvent, int, error) {
	t.Helper()
	cr := &chunkReader{chunks: chunks}
	s := newSSEReader(cr, func() time.Duration { return cr.now }, make([]byte, bufSize))
	var out []gotEvent
	for {
		ev, err := s.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return out, s.Comments, err
		}
		out = append(out, gotEvent{string(ev.Name), string(ev.Data), ev.At})
	}
}

func TestSSEReader(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	cases := []struct {
		name     string
		chunks   []string
		buf      int
		want     []gotEvent
		comments int
		wantErr  bool
	}{
		{name: "several events in one read share its time",
			chunks: []string{"data: a\n\ndata: b\n\n"},
			want:   []gotEvent{{"", "a", 1 * ms}, {"", "b", 1 * ms}}},
		{name: "event split across reads is stamped by the last part",
			chunks: []string{"data: {\"te", "xt\":1}\n", "\n"},
			want:   []gotEvent{{"", `{"text":1}`, 3 * ms}}},
		{name: "data: without a space",
			chunks: []string{"data:x\n\n"},
			want:   []gotEvent{{"", "x", 1 * ms}}},
		{name: "only one leading space is removed",
			chunks: []string{"data:  x\n\n"},
			want:   []gotEvent{{"", " x", 1 * ms}}},
		{name: "CRLF with CR and LF in different reads",
			chunks: []string{"data: a\r", "\n\r", "\ndata: b\r\n\r\n"},
			want:   []gotEvent{{"", "a", 2 * ms}, {"", "b", 3 * ms}}},
		{name: "lone CR line endings",
			chunks: []string{"data: a\r\rdata: b\r\r"},
			want:   []gotEvent{{"", "a", 1 * ms}, {"", "b", 1 * ms}}},
		{name: "comments are keep-alives, not events",
			chunks: []string{": ping\n\n", ":\n", "data: a\n\n"},
			want:   []gotEvent{{"", "a", 3 * ms}}, comments: 2},
		{name: "event name and multi-line data",
			chunks: []string{"event: error\ndata: x\ndata: y\nid: 7\nretry: 5\n\n"},
			want:   []gotEvent{{"error", "x\ny", 1 * ms}}},
		{name: "blank lines without data dispatch nothing",
			chunks: []string{"\n\n\nevent: e\n\ndata: a\n\n"},
			want:   []gotEvent{{"", "a", 1 * ms}}},
		{name: "complete last event without blank line at EOF",
			chunks: []string{"data: a\n\ndata: b\n"},
			want:   []gotEvent{{"", "a", 1 * ms}, {"", "b", 1 * ms}}},
		{name: "line longer than the buffer grows it",
			chunks: []string{"data: 0123456789012345678901234567890123456789", "0123456789\n\n"}, buf: 16,
			// A 16-byte buffer takes four reads; the event is stamped by the last.
			want: []gotEvent{{"", "01234567890123456789012345678901234567890123456789", 4 * ms}}},
		{name: "stream cut inside a line is an error",
			chunks: []string{"data: a\n\ndata: {\"te"},
			want:   []gotEvent{{"", "a", 1 * ms}}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			buf := tc.buf
			if buf == 0 {
				buf = 4096
			}
			got, comments, err := readAll(t, append([]string(nil), tc.chunks...), buf)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %t", err, tc.wantErr)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("events = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if comments != tc.comments {
				t.Errorf("comments = %d, want %d", comments, tc.comments)
			}
		})
	}
}

// TestSSELongCommentNotKept: a 5 MiB comment line (a server's padding or
// keep-alive, the head-of-line check's large event) arriving in 64 KiB reads
// is dropped as it comes: the reader's buffer stays within two reads, so no
// read of that stream copies more than a read's bytes or grows a buffer
// (before, the line was kept whole: the buffer doubled up to 8 MiB, each
// doubling one copy of everything so far, on the event loop), and the
// events around it still parse.
func TestSSELongCommentNotKept(t *testing.T) {
	const size, read = 5 << 20, 64 << 10
	stream := "data: a\n\n:" + strings.Repeat("x", size) + "\r\ndata: b\n\n"
	t.Run("pull", func(t *testing.T) {
		var chunks []string
		for i := 0; i < len(stream); i += read {
			chunks = append(chunks, stream[i:min(i+read, len(stream))])
		}
		cr := &chunkReader{chunks: chunks}
		s := newSSEReader(cr, func() time.Duration { return cr.now }, make([]byte, read))
		var got []string
		for {
			ev, err := s.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(ev.Data))
		}
		if len(got) != 2 || got[0] != "a" || got[1] != "b" || s.Comments != 1 {
			t.Fatalf("events %q, comments %d; want [a b], 1", got, s.Comments)
		}
		if len(s.buf) > 2*read {
			t.Errorf("buffer grew to %d bytes for a %d-byte comment line read %d bytes at a time: the line was kept", len(s.buf), size, read)
		}
	})
	t.Run("push", func(t *testing.T) {
		s := newSSEReader(nil, nil, make([]byte, 512))
		var got []string
		for i := 0; i < len(stream); i += read {
			if err := s.feed([]byte(stream[i:min(i+read, len(stream))]), time.Duration(i)); err != nil {
				t.Fatal(err)
			}
			for {
				ev, ok := s.parse()
				if !ok {
					break
				}
				got = append(got, string(ev.Data))
			}
		}
		if len(got) != 2 || got[0] != "a" || got[1] != "b" || s.Comments != 1 {
			t.Fatalf("events %q, comments %d; want [a b], 1", got, s.Comments)
		}
		if len(s.buf) > 2*read {
			t.Errorf("buffer grew to %d bytes for a %d-byte comment line fed %d bytes at a time: the line was kept", len(s.buf), size, read)
		}
	})
	t.Run("cut inside", func(t *testing.T) {
		s := newSSEReader(nil, nil, nil)
		if err := s.feed([]byte(": pad"), 0); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.parse(); ok {
			t.Fatal("an event from an unfinished comment")
		}
		s.err = io.EOF
		if _, err := s.end(); !errors.Is(err, errSSETruncated) {
			t.Fatalf("end inside a comment line: %v, want %v", err, errSSETruncated)
		}
	})
}

// TestSSELongLineLinear: a 1 MiB line arriving in 512-byte reads (pull) or
// pushes is searched for its end once, not once per read: the bytes the
// reader searches stay within twice the bytes it was given, and the events
// around the line still parse.
func TestSSELongLineLinear(t *testing.T) {
	const size = 1 << 20
	long := ": " + string(make([]byte, size)) + "\n\n"
	stream := "data: a\n\n" + long + "data: b\r\n\r\n"
	total := int64(len(stream))

	t.Run("pull", func(t *testing.T) {
		var chunks []string
		for i := 0; i < len(stream); i += 512 {
			chunks = append(chunks, stream[i:min(i+512, len(stream))])
		}
		cr := &chunkReader{chunks: chunks}
		s := newSSEReader(cr, func() time.Duration { return cr.now }, make([]byte, 512))
		var got []string
		for {
			ev, err := s.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(ev.Data))
		}
		if len(got) != 2 || got[0] != "a" || got[1] != "b" || s.Comments != 1 {
			t.Fatalf("events %q, comments %d; want [a b], 1", got, s.Comments)
		}
		if s.scanned > 2*total {
			t.Errorf("searched %d bytes for line ends in a %d-byte stream: not linear", s.scanned, total)
		}
	})
	t.Run("push", func(t *testing.T) {
		s := newSSEReader(nil, nil, make([]byte, 512))
		var got []string
		for i := 0; i < len(stream); i += 512 {
			if err := s.feed([]byte(stream[i:min(i+512, len(stream))]), time.Duration(i)); err != nil {
				t.Fatal(err)
			}
			for {
				ev, ok := s.parse()
				if !ok {
					break
				}
				got = append(got, string(ev.Data))
			}
		}
		if len(got) != 2 || got[0] != "a" || got[1] != "b" {
			t.Fatalf("events %q; want [a b]", got)
		}
		if s.scanned > 2*total {
			t.Errorf("searched %d bytes for line ends in a %d-byte stream: not linear", s.scanned, total)
		}
	})
}
