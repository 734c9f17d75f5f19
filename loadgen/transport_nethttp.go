//go:build loadgen_nethttp

package loadgen

// defaultTransport: see transport_default.go.
const defaultTransport = TransportNetHTTP
