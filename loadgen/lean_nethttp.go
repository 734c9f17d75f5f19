//go:build loadgen_nethttp

package loadgen

// leanByDefault: see lean_default.go.
const leanByDefault = false
