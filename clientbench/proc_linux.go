//go:build linux

package clientbench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of /proc/PID/stat's utime and stime: clock ticks of
// 1/100 s (USER_HZ, fixed at 100 in Linux's user-space ABI).
const userHZ = 100

// processCPU is process pid's user+system CPU time so far, from
// /proc/PID/stat (fields 14 and 15, after the command name in parentheses),
// at 10 ms resolution.
func processCPU(pid int) (time.Duration, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(b, path)
}

// parseProcStatCPU reads utime+stime from the contents b of a /proc/PID/stat
// file named path (for errors).
func parseProcStatCPU(b []byte, path string) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no ')' after the command name", path)
	}
	// After ") ": state (field 3), then fields 4…; utime and stime are 14 and 15.
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields after the command name, want at least 13", path, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: utime/stime %q: %w", path, s, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
