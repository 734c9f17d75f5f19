//go:build !unix

package integrate

import (
	"errors"
	"os"
	"os/exec"
)

type signal int

const (
	sigTerm signal = iota
	sigKill
)

// stopSignal: without signals, every stop is a kill of the leader.
func stopSignal(string) signal { return sigTerm }

// setProcessGroup is a no-op where there are no process groups; Close kills the leader only.
func setProcessGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, _ signal) error {
	if cmd.Process == nil {
		return os.ErrProcessDone
	}
	return cmd.Process.Kill()
}

func isProcessDone(err error) bool { return errors.Is(err, os.ErrProcessDone) }
