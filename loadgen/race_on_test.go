//go:build race

package loadgen_test

// raceEnabled is true under -race, which slows the HTTP path several-fold.
const raceEnabled = true
