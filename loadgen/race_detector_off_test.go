//go:build !race

package loadgen

// raceDetector is true under -race, which slows the HTTP path several-fold.
const raceDetector = false
