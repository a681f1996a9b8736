package service

import (
	"context"
	"errors"
	"strings"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// requestKey is the id under which the caller's request id on minion is stored. A request id is scoped
// by its client: the key is oduflowenv.ScopedRequestID(minion, request), unless a claim or a custom
// execution stored under the caller's id itself is bound to minion (a request of an earlier release or
// of oduflowctl, or the stored id that /v1/unresolved and the executions list show), which is then
// answered as it is. A record bound to another client is never read further: its id answers exactly as
// an id never seen (the scoped key of this client), so that no company learns, blocks or takes another
// company's request through its own client. minion is already authorized.
func (s *Service) requestKey(ctx context.Context, minion, request string) (string, error) {
	bound, err := s.boundTo(ctx, minion, request)
	if err != nil {
		return "", err
	}
	if bound {
		return request, nil
	}
	return oduflowenv.ScopedRequestID(minion, request), nil
}

// boundTo reports whether a claim or a custom execution stored under request is minion's. A damaged
// record is not minion's here (whose it is cannot be told): the caller's request goes to its scoped key,
// where the Dispatcher meets nothing of it; only a store that cannot be read at all is an error.
func (s *Service) boundTo(ctx context.Context, minion, request string) (bool, error) {
	if s.store != nil {
		c, err := s.store.Get(ctx, request)
		switch {
		case err == nil:
			if c.MinionID == minion {
				return true, nil
			}
		case errors.Is(err, claims.ErrNoClaim), errors.Is(err, claims.ErrCorruptClaim):
		default:
			return false, err
		}
	}
	if s.cat != nil {
		e, _, err := s.cat.Resolve(ctx, request)
		switch {
		case err == nil:
			return e.MinionID == minion, nil
		case errors.Is(err, catalog.ErrNotFound), errors.Is(err, catalog.ErrCorrupt):
		default:
			return false, err
		}
	}
	return false, nil
}

// keyedError is an error of a call made with a stored key, told with the caller's request id: an
// answer names the id the caller gave, never the key it is stored under.
type keyedError struct {
	err          error
	key, request string
}

func (e *keyedError) Error() string { return strings.ReplaceAll(e.err.Error(), e.key, e.request) }

func (e *keyedError) Unwrap() error { return e.err }

// asCaller is err told with the caller's request id (nil stays nil).
func asCaller(err error, key, request string) error {
	if err == nil || key == request {
		return err
	}
	return &keyedError{err: err, key: key, request: request}
}
