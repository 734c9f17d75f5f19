//go:build !linux

package loadgen

// segmentServerEnv names BenchmarkReactorSegmentPerEvent's server child,
// which exists only where the reactor does.
const segmentServerEnv = "LOADGEN_SEGMENT_SERVER_STEP"

func segmentServerChild(string) int { return 2 }
