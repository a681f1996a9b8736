package salt

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// The decoder is internal/saltwire's, shared with the simulator; this file is its door into this
// package (its limits and error sentinels).

// saltConstant is Salt's ext type 79: a salt.defaults._Constant such as NOT_SET, carried as
// msgpack [name, value].
type saltConstant = saltwire.Constant

// extValue is an extension value the decoder has no meaning for. It is kept, not rejected, so
// that one odd value does not make a whole return unreadable.
type extValue = saltwire.Ext

// decodeValue decodes one msgpack document tolerantly, the way Salt's receivers do (raw=False,
// strict_map_key=False; saltwire.Decode says how each type comes out), within
// defaultReplyDecodeLimits.
func decodeValue(data []byte) (any, error) {
	return decodeValueLimited(data, defaultReplyDecodeLimits())
}

// decodeValueLimited is decodeValue within the given limits: a document that would exceed them
// fails with errDecodeBudget before the excess is allocated.
func decodeValueLimited(data []byte, lim decodeLimits) (any, error) {
	v, _, err := decodeValueBudget(data, lim)
	return v, err
}

// decodeValueBudget is decodeValueLimited that also returns the estimated bytes the decoded
// value holds.
func decodeValueBudget(data []byte, lim decodeLimits) (any, int64, error) {
	if !lim.Valid() {
		return nil, 0, errors.Wrap(ErrInvalidRequest, "invalid decode limits")
	}
	v, est, err := saltwire.Decode(data, lim)
	return v, est, wireDecodeError(err)
}

// stringList converts a decoded []any of strings; nil/absent gives an empty list.
func stringList(v any) ([]string, bool) {
	if v == nil {
		return []string{}, true
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for _, it := range arr {
		s, ok := it.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}
