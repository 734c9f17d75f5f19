//go:build !loadgen_nethttp

package loadgen

// defaultTransport is the client Replay uses for plain http:// targets when
// no WithHTTPClient or WithTransport is given: the reactor where epoll
// exists, else net/http. Build with -tags loadgen_nethttp to run the whole
// suite through net/http.
const defaultTransport = defaultNativeTransport
