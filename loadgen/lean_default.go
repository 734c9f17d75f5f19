//go:build !loadgen_nethttp && !loadgen_lean

package loadgen

// defaultTransport is the client Replay uses for plain http:// targets when
// no WithHTTPClient or WithTransport is given: the reactor where epoll
// exists, else the lean client. Build with -tags loadgen_lean or
// loadgen_nethttp to run the whole suite through the other clients.
const defaultTransport = defaultNativeTransport
