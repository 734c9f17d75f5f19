package loadgen

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestHeadersReachServer: WithHeaders' headers arrive on every transport
// (the reactor and net/http for http://; net/http for https:// with
// the server's CA in WithTLSConfig), and bad names or values are refused.
func TestHeadersReachServer(t *testing.T) {
	const key = "Bearer sk-test-123456"
	var (
		mu  sync.Mutex
		got []string
	)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Tenant"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseTwoTokens)
	})
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewTLSServer(h)
	t.Cleanup(tlsSrv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(tlsSrv.Certificate())

	hdr := http.Header{"Authorization": {key}, "X-Tenant": {"t1"}}
	want := key + "|t1"
	cases := map[string][]Option{
		"net/http": {WithTransport(TransportNetHTTP)},
	}
	if reactorSupported {
		cases["reactor"] = []Option{WithTransport(TransportReactor)}
	}
	for name, opts := range cases {
		rec, _ := replayOne(t, plain.URL, 2, append(opts, WithHeaders(hdr))...)
		if rec.State != StateOK {
			t.Errorf("%s: state %s (%s)", name, rec.State, rec.Error)
		}
	}
	rec, _ := replayOne(t, tlsSrv.URL, 2, WithHeaders(hdr), WithTLSConfig(&tls.Config{RootCAs: pool}))
	if rec.State != StateOK {
		t.Errorf("https: state %s (%s)", rec.State, rec.Error)
	}
	mu.Lock()
	if len(got) != len(cases)+1 {
		t.Errorf("server saw %d requests, want %d", len(got), len(cases)+1)
	}
	for i, g := range got {
		if g != want {
			t.Errorf("request %d: headers %q, want %q", i, g, want)
		}
	}
	mu.Unlock()
	// Without the CA, https fails on the unknown authority (system roots only).
	rec, _ = replayOne(t, tlsSrv.URL, 2)
	if rec.State == StateOK || !strings.Contains(rec.Error, "certificate") {
		t.Errorf("https without its CA: state %s, error %q; want a certificate error", rec.State, rec.Error)
	}

	for _, bad := range []http.Header{{"Bad Name": {"x"}}, {"X-Key": {"a\r\nInjected: 1"}}, {"Content-Length": {"3"}}} {
		err := CheckHeaders(bad)
		if err == nil {
			t.Errorf("CheckHeaders(%v) = nil", bad)
		} else if strings.Contains(err.Error(), "Injected") {
			t.Errorf("the error quotes the value: %v", err)
		}
	}
}
