//go:build loadgen_lean

package loadgen

// defaultTransport: see lean_default.go.
const defaultTransport = TransportLean
