//go:build !loadgen_lean

package loadgen

// leanByDefault says whether Replay sends to plain http:// targets through
// the lean client (lean.go) when no WithHTTPClient is given. Build with
// -tags loadgen_lean to run the whole suite through it.
const leanByDefault = false
