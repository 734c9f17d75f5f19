//go:build !loadgen_nethttp

package loadgen

// leanByDefault says whether Replay sends to plain http:// targets through
// the lean client (lean.go) when no WithHTTPClient is given. Build with
// -tags loadgen_nethttp to run the whole suite through net/http instead.
const leanByDefault = true
