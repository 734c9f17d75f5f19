package telemetry

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an in-process OTLP/HTTP collector: it decodes the protobuf
// payloads posted to /v1/traces and /v1/metrics and keeps them. It fails the
// test on any other path, content type or an undecodable body.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	traces  []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricpb.ExportMetricsServiceRequest
	headers []http.Header

	// delayNs slows every answer down (a collector that keeps up badly).
	delayNs atomic.Int64
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{t: t}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	if d := time.Duration(rc.delayNs.Load()); d > 0 {
		time.Sleep(d)
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
		rc.t.Errorf("receiver: %s %s with Content-Type %q: want POST application/x-protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			rc.t.Errorf("receiver: gzip: %v", err)
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		rc.t.Errorf("receiver: read %s: %v", r.URL.Path, err)
		return
	}
	var resp proto.Message
	rc.mu.Lock()
	rc.headers = append(rc.headers, r.Header.Clone())
	switch r.URL.Path {
	case "/v1/traces":
		req := &coltracepb.ExportTraceServiceRequest{}
		err = proto.Unmarshal(b, req)
		rc.traces = append(rc.traces, req)
		resp = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		req := &colmetricpb.ExportMetricsServiceRequest{}
		err = proto.Unmarshal(b, req)
		rc.metrics = append(rc.metrics, req)
		resp = &colmetricpb.ExportMetricsServiceResponse{}
	default:
		rc.t.Errorf("receiver: unexpected path %q", r.URL.Path)
	}
	rc.mu.Unlock()
	if err != nil {
		rc.t.Errorf("receiver: decode %s: %v", r.URL.Path, err)
		http.Error(w, "bad protobuf", http.StatusBadRequest)
		return
	}
	out, err := proto.Marshal(resp)
	if err != nil {
		rc.t.Errorf("receiver: encode response: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// spans returns every span received, flattened.
func (rc *receiver) spans() []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range rc.traces {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				out = append(out, ss.GetSpans()...)
			}
		}
	}
	return out
}

// lastMetrics returns, per metric name, the metric of the last export that
// carried it (cumulative temporality: the last one holds the totals).
func (rc *receiver) lastMetrics() map[string]*metricpb.Metric {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]*metricpb.Metric{}
	for _, req := range rc.metrics {
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					out[m.GetName()] = m
				}
			}
		}
	}
	return out
}

// attrMap flattens OTLP attributes to Go values (string, int64, float64, bool).
func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = v.BoolValue
		case *commonpb.AnyValue_ArrayValue: // as fmt.Sprint of the string values: "[a b]"
			var ss []string
			for _, e := range v.ArrayValue.GetValues() {
				ss = append(ss, e.GetStringValue())
			}
			out[kv.GetKey()] = fmt.Sprint(ss)
		default:
			out[kv.GetKey()] = kv.GetValue().String()
		}
	}
	return out
}

// newHangingReceiver is a collector that accepts every connection and
// request but never answers until release is closed or the client gives up.
func newHangingReceiver(t *testing.T, release <-chan struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// syncBuffer is a bytes.Buffer safe to write from export goroutines while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}
