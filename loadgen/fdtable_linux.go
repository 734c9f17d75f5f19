//go:build linux

package loadgen

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// maxFDTable caps growFDTable: 65,536 descriptors, a 512 KiB table of file
// pointers in the kernel, once per process.
const maxFDTable = 1 << 16

// growFDTable makes the process's file-descriptor table hold descriptors
// 0..n−1 (capped at maxFDTable and at the RLIMIT_NOFILE soft limit), by
// duplicating a descriptor to the lowest free number ≥ n−1 (fcntl(2)
// F_DUPFD_CLOEXEC) and closing both; the kernel never shrinks the table, so
// a later socket(2), accept4(2) or open(2) below n−1 never grows it.
//
// Why: Linux grows the table by doubling (64, 128, 256, …), and in a
// process of several threads each growth waits for an RCU grace period
// (fs/file.c, expand_fdtable: synchronize_rcu), a few ms to tens of ms when
// the CPUs are busy; every thread that allocates a descriptor meanwhile
// waits too. Measured on a 2-core VM (Linux 6.18, HZ 250) with both CPUs
// busy: 11.5 ms to grow to 512 descriptors, 7.6 ms to 1,024; a dispatcher
// dialling a new connection at that moment sends late by as much
// (results/dispatch-2026-12-01). Done before the run's clock starts, the
// wait is paid once, by nobody's request.
func growFDTable(n int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	n = min(n, maxFDTable)
	if lim.Cur < uint64(n) {
		n = int(lim.Cur)
	}
	if n <= 64 { // the table every process starts with
		return nil
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	defer unix.Close(efd)
	hi, err := unix.FcntlInt(uintptr(efd), unix.F_DUPFD_CLOEXEC, n-1)
	if err != nil {
		return fmt.Errorf("fcntl(F_DUPFD_CLOEXEC, %d): %w", n-1, err)
	}
	return unix.Close(hi)
}
