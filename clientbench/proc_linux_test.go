//go:build linux

package clientbench

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestParseProcStatCPU: utime and stime are fields 14 and 15, counted after
// the command name, which may hold spaces and parentheses; a short line is
// an error naming the file.
func TestParseProcStatCPU(t *testing.T) {
	line := "4242 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 1 0 100\n"
	got, err := parseProcStatCPU([]byte(line), "/proc/4242/stat")
	if err != nil || got != 3250*time.Millisecond {
		t.Errorf("got %v, %v; want 3.25 s (325 ticks)", got, err)
	}
	if _, err := parseProcStatCPU([]byte("4242 (x) S 1 2"), "/proc/4242/stat"); err == nil || !strings.Contains(err.Error(), "/proc/4242/stat") {
		t.Errorf("short line: err %v, want one naming the file", err)
	}
	if _, err := processCPU(os.Getpid()); err != nil {
		t.Errorf("this process: %v", err)
	}
}
