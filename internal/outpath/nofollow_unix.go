//go:build unix

package outpath

import "syscall"

// noFollow makes an open fail on a link at the path's last component.
const noFollow = syscall.O_NOFOLLOW
