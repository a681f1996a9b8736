package salttest

import (
	"strconv"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// errMsgpack reports a document the simulator cannot decode (truncated, reserved code, too deep).
var errMsgpack = saltwire.ErrMsgpack

// maxDepth bounds the nesting the simulator decodes (msgpack-python's own default is far
// deeper; no Salt request nests beyond a dozen levels).
const maxDepth = 100

// decodeLimits are the simulator's: what the master's request port accepts (its size cap is
// checked per frame), with nesting bounded.
var decodeLimits = saltwire.Limits{MaxElements: 1 << 26, MaxBytes: 1 << 34, MaxDepth: maxDepth}

// unpack decodes exactly one document in order and losslessly (saltwire.DecodeOrdered): nil,
// bool, int64 (uint64 above MaxInt64), float64, string (any str-family value, UTF-8 or not),
// []byte (bin), []any, *omap (maps, keys of any type, in wire order), extValue. Trailing bytes
// are an error.
func unpack(b []byte) (any, error) {
	v, n, err := unpackPrefix(b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, errors.Wrap(errMsgpack, "trailing bytes")
	}
	return v, nil
}

// unpackPrefix decodes the document at the start of b and reports how many bytes it used.
func unpackPrefix(b []byte) (any, int, error) { return saltwire.DecodeOrdered(b, decodeLimits, nil) }

// plain converts decoded values into ordinary Go values for handlers: maps become
// map[string]any (non-string keys formatted), arrays []any, ext values their raw bytes.
func plain(v any) any {
	switch x := v.(type) {
	case *omap:
		out := make(map[string]any, x.Len())
		for i, k := range x.Keys {
			out[keyString(k)] = plain(x.Vals[i])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = plain(el)
		}
		return out
	case extValue:
		return x.Data
	}
	return v
}

func keyString(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "None"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return "?"
}
