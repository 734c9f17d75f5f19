package loadgen

import "context"

// Server is the system under test; *sim.Server and *integrate.Process satisfy it.
// loadgen never owns its lifetime.
type Server interface {
	// BaseURL is the OpenAI-compatible root, e.g. "http://127.0.0.1:8000", no trailing slash.
	BaseURL() string
	// Ready returns once the server answers, or ctx ends.
	Ready(ctx context.Context) error
}

// RequestIDHeader is the HTTP header carrying the schedule's request id
// (decimal traces.Request.ID) on every request, so a server that keeps ground
// truth (sim) can key it.
const RequestIDHeader = "X-Request-Id"
