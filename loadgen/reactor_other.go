//go:build !linux

package loadgen

import (
	"context"
	"errors"

	"github.com/transferlab/transferlab/traces"
)

// reactorSupported: the reactor needs epoll.
const reactorSupported = false

// defaultNativeTransport is net/http where there is no epoll.
const defaultNativeTransport = TransportNetHTTP

// reactor does not exist here: config.validate refuses TransportReactor.
type reactor struct{}

func newReactor(*client, *target, context.Context) (*reactor, error) {
	return nil, errors.New("the reactor needs Linux (epoll)")
}

func (*reactor) start(context.Context, *traces.Request, *Record, func()) {}
func (*reactor) close()                                                  {}
