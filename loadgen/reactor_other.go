//go:build !linux

package loadgen

// reactorSupported: the reactor needs epoll.
const reactorSupported = false

// defaultNativeTransport is the lean client where there is no epoll.
const defaultNativeTransport = TransportLean
