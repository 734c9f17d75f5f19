//go:build linux

package loadgen

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fdTableSize is the FDSize line of /proc/self/status: how many descriptors
// the process's table holds now.
func fdTableSize(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "FDSize:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("FDSize %q: %v", v, err)
			}
			return n
		}
	}
	t.Skip("no FDSize in /proc/self/status")
	return 0
}

// The descriptor table already holds every connection the run can open (and
// an in-process server's side of each) when the first request arrives, so no
// send waits for the kernel to grow it mid-run.
func TestReplayGrowsFDTableBeforeFirstSend(t *testing.T) {
	const n = 3000
	var once sync.Once
	atFirst := make(chan int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { atFirst <- fdTableSize(t) })
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
	}))
	defer srv.Close()
	s := schedule(n, time.Millisecond, 4, 1)
	var sink SliceSink
	// Only request 0 is sent; the run could have held n connections.
	if _, err := Replay(context.Background(), urlServer{srv.URL}, s, &countingPacer{Pacer: NewTracePacer(s), n: 1}, &sink); err != nil {
		t.Fatalf("Replay: %v", err)
	}
	lim := n*2 + fdSpare
	select {
	case got := <-atFirst:
		if got < lim {
			t.Errorf("descriptor table at the first request: %d entries, want ≥ %d (2 × %d requests + %d)", got, lim, n, fdSpare)
		}
	default:
		t.Fatal("the server saw no request")
	}
}
