package energy

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a sampler goroutine outlives its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
