package telemetry

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// grpcReceiver is an in-process OTLP/gRPC collector counting what it receives.
type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	colmetricpb.UnimplementedMetricsServiceServer

	mu      sync.Mutex
	spans   int
	metrics map[string]bool
}

func (g *grpcReceiver) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			g.spans += len(ss.GetSpans())
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// metricsService adapts grpcReceiver to the metrics service, whose Export
// method has the same name as the trace service's.
type metricsService struct{ *grpcReceiver }

func (m metricsService) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, mt := range sm.GetMetrics() {
				m.metrics[mt.GetName()] = true
			}
		}
	}
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

func TestQuickstartExportOTLPGRPC(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &grpcReceiver{metrics: map[string]bool{}}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, rc)
	colmetricpb.RegisterMetricsServiceServer(srv, metricsService{rc})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("grpc Serve: %v", err)
		}
	}()

	ctx := context.Background()
	cfg := Config{Enabled: true, Exporter: ExporterOTLPGRPC, Endpoint: "http://" + lis.Addr().String(),
		ShutdownTimeout: 30 * time.Second, MetricInterval: time.Hour}
	var warn syncBuffer
	e, err := Start(ctx, cfg, RunInfo{Name: "grpc", Model: "test-model", Simulated: true}, WithWarnings(&warn))
	if err != nil {
		t.Fatal(err)
	}
	truths, records, _ := quickstart(ctx, t, e)
	if err := e.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	n := 1 + len(truths)
	for _, recs := range records {
		n += len(recs)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.spans != n {
		t.Errorf("gRPC receiver got %d spans, want %d", rc.spans, n)
	}
	for _, name := range []string{MetricOperationDuration, MetricTTFT, MetricRequests, MetricGPUPower} {
		if !rc.metrics[name] {
			t.Errorf("gRPC receiver did not get %s", name)
		}
	}
	if warn.Len() > 0 {
		t.Errorf("warnings: %s", warn.String())
	}
}

// TestShutdownBoundedGRPC: a TCP peer that accepts and never speaks HTTP/2;
// the gRPC exporter would wait for its own timeout, Shutdown does not.
func TestShutdownBoundedGRPC(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		lis.Close()
		<-accepted
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()

	const bound = time.Second
	ctx := context.Background()
	e, err := Start(ctx, Config{Enabled: true, Exporter: ExporterOTLPGRPC, Endpoint: "http://" + lis.Addr().String(), ShutdownTimeout: bound},
		RunInfo{}, WithWarnings(&syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	feedCell(ctx, t, e, 50)
	began := time.Now()
	err = e.Shutdown(ctx)
	took := time.Since(began)
	// Same slack as TestShutdownBounded: 4 s over the bound for a loaded CI machine.
	if took > bound+4*time.Second {
		t.Errorf("Shutdown took %v, want at most %v + 4 s slack", took, bound)
	}
	if err == nil || !strings.Contains(err.Error(), "otlp-grpc") {
		t.Errorf("Shutdown = %v, want a warning naming the exporter", err)
	}
	t.Logf("gRPC Shutdown against a silent peer: %v (bound %v)", took, bound)
}
