//go:build linux

package loadgen

// reactorSupported: Linux has epoll.
const reactorSupported = true

// defaultNativeTransport is the client for plain http:// targets on Linux.
// TODO(session 3): the reactor, in progress; lean until it lands.
const defaultNativeTransport = TransportLean
