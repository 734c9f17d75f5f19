//go:build loadgen_nethttp && !loadgen_lean

package loadgen

// defaultTransport: see lean_default.go.
const defaultTransport = TransportNetHTTP
