//go:build unix

package integrate

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

var sigKill = syscall.SIGKILL

// stopSignal maps a StopSignals name to the signal (SIGTERM for others).
func stopSignal(name string) syscall.Signal {
	switch name {
	case "SIGINT":
		return syscall.SIGINT
	case "SIGQUIT":
		return syscall.SIGQUIT
	case "SIGHUP":
		return syscall.SIGHUP
	case "SIGUSR1":
		return syscall.SIGUSR1
	}
	return syscall.SIGTERM
}

// setProcessGroup starts cmd as the leader of a new process group, so teardown
// reaches every worker it spawns.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to cmd's whole process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return os.ErrProcessDone
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}

func isProcessDone(err error) bool {
	return errors.Is(err, syscall.ESRCH) || errors.Is(err, os.ErrProcessDone)
}
