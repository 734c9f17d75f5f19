//go:build !unix

package outpath

// noFollow: no such flag here; O_EXCL alone refuses a link already there.
const noFollow = 0
