//go:build linux

package clientbench

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// allowedCPUs lists the CPUs this process's calling thread may run on
// (sched_getaffinity), in increasing order.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// pinProcess restricts every thread of this process to cpus
// (sched_setaffinity works per thread; Go's threads are listed in
// /proc/self/task, and threads created later inherit the mask of the thread
// that creates them) and checks that every thread then has that mask. It
// returns a restore that puts back the mask the calling thread had.
func pinProcess(cpus []int) (restore func() error, err error) {
	if len(cpus) == 0 {
		return nil, fmt.Errorf("pinning: no CPU given")
	}
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("pinning: sched_getaffinity: %w", err)
	}
	for _, c := range cpus {
		if c < 0 || c >= len(set)*64 {
			return nil, fmt.Errorf("pinning: CPU %d out of range", c)
		}
		set.Set(c)
	}
	if err := setAllThreads(&set); err != nil {
		_ = setAllThreads(&old)
		return nil, fmt.Errorf("pinning to CPUs %v: %w", cpus, err)
	}
	return func() error { return setAllThreads(&old) }, nil
}

// setAllThreads sets every thread's mask to set, repeating until a pass finds
// every thread already set (a thread started during a pass from a thread not
// yet set would otherwise keep the old mask).
func setAllThreads(set *unix.CPUSet) error {
	for pass := 0; pass < 10; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		changed := false
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			var cur unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &cur); err != nil {
				continue // the thread exited
			}
			if cur == *set {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil {
				return fmt.Errorf("sched_setaffinity thread %d: %w", tid, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("threads kept appearing with another CPU mask after 10 passes")
}
