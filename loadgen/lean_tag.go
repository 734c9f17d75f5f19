//go:build loadgen_lean

package loadgen

// leanByDefault: see lean_default.go.
const leanByDefault = true
