package salttest

import "github.com/oduflow/oduflow-go/internal/saltwire"

// Salt packs with msgpack-python in two dialects, and the simulator reproduces both byte for
// byte with the wire's own encoder (internal/saltwire, shared with the client; the captured
// vectors are the independent oracle):
//
//   - event bus (use_bin_type=True, saltwire.Event): str8 for 32-255-byte strings, bin for bytes;
//   - request-channel replies (use_bin_type=False, saltwire.Request): every string and every
//     byte slice in the str family without str8 (fixstr, str16, str32).

// extValue is an ext-typed msgpack value (Salt uses 78 for datetimes and 79 for constants).
type extValue = saltwire.Ext

// packSalt encodes a request-channel reply (old str family only).
func packSalt(v any) ([]byte, error) { return saltwire.Marshal(saltwire.Request, v) }

// packEvent encodes an event-bus frame or event data (current spec).
func packEvent(v any) ([]byte, error) { return saltwire.Marshal(saltwire.Event, v) }
