//go:build !linux

package loadgen

import (
	"context"
	"errors"

	"github.com/transferlab/transferlab/traces"
)

// reactorSupported: the reactor needs epoll.
const reactorSupported = false

// defaultNativeTransport is the lean client where there is no epoll.
const defaultNativeTransport = TransportLean

// reactor does not exist here: config.validate refuses TransportReactor.
type reactor struct{}

func newReactor(*client, *leanTransport, context.Context) (*reactor, error) {
	return nil, errors.New("the reactor needs Linux (epoll)")
}

func (*reactor) start(context.Context, *traces.Request, *Record, func()) {}
func (*reactor) close()                                                  {}
