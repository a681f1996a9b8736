package saltwire

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// The sentinels of this package. Package salt uses ErrMsgpack, ErrUnsupportedType and ErrProtocol
// as its own (same identity, so errors.Is holds across the boundary) and marks ErrBudget and
// ErrFrameTooLarge with its limit errors (ErrLimitExceeded) where they leave its API.
var (
	// ErrMsgpack is the cause of every decoding failure of msgpack data.
	ErrMsgpack = errors.New("salt: invalid msgpack data")
	// ErrBudget: a document would cost more to decode than its Limits allow (values, estimated
	// bytes, nesting). Every ErrBudget error is also ErrMsgpack.
	ErrBudget = errors.New("salt: msgpack document exceeds the decode budget")
	// ErrUnsupportedType is returned by the encoder for Go values that have no msgpack form.
	ErrUnsupportedType = errors.New("salt: value cannot be encoded as Salt msgpack")
	// ErrProtocol is the cause of ZMTP protocol violations by the peer.
	ErrProtocol = errors.New("salt: ZMTP protocol error")
	// ErrFrameTooLarge: a ZMTP frame announced more bytes than the reader's limit (nothing of
	// it was allocated).
	ErrFrameTooLarge = errors.New("salt: ZMTP frame too large")
)

// budgetError is an ErrBudget refusal that is also ErrMsgpack.
func budgetError(what string) error {
	return errmark.Mark(errors.Wrapf(ErrBudget, "%s", errors.Safe(what)), ErrMsgpack)
}
