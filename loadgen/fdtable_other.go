//go:build !linux

package loadgen

// growFDTable does nothing outside Linux (see fdtable_linux.go).
func growFDTable(int) error { return nil }
