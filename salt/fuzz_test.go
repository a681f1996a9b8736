package salt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// FuzzDecodeReply: any bytes a master (or anything listening on its port)
// sends must decode or fail cleanly, without panics or large allocations,
// and every reply parser must cope with whatever decodes.
func FuzzDecodeReply(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(vectorDir, "clear", "*.reply.bin"))
	for _, p := range files {
		f.Add(readVector(f, "clear/"+filepath.Base(p)))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeValue(b)
		if err != nil {
			return
		}
		_, _ = parsePublishReply(v)
		_, _ = parseWheelReply(v)
		_ = replyError(v)
		_, _ = parseToken(v)
		// what decodes can be encoded again (keys are strings after decoding)
		if _, err := encodeSalt(toEncodable(v)); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

// toEncodable converts decoder-only types for the round trip.
func toEncodable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toEncodable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toEncodable(e)
		}
		return out
	case string, int64, uint64, float64, bool, nil:
		return x
	}
	return nil
}

// FuzzEventFraming: any byte stream on the event bus must yield frames,
// a clean error, or EOF; never a panic, never a frame above the cap.
func FuzzEventFraming(f *testing.F) {
	raw := readVector(f, "eventbus/eventbus.raw")
	f.Add(raw[:1000])
	f.Add(readVector(f, "eventbus/event_ret_test_ping.frame.bin"))
	frame := readVector(f, "eventbus/event_new.frame.bin")
	f.Add(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...))
	f.Add([]byte{0x00, 0x00, 0x00, 0x00})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 4096
		fr := &frameReader{br: bufio.NewReader(bytes.NewReader(b)), max: limit}
		for i := 0; i < 100; i++ {
			frame, err := fr.next()
			if err != nil {
				return
			}
			if len(frame) > limit {
				t.Fatalf("frame of %d bytes above the cap", len(frame))
			}
			if fr.framing == framingBare {
				// exactly one syntactically complete msgpack object
				r := bytes.NewReader(frame)
				if err := msgpack.NewDecoder(r).Skip(); err != nil || r.Len() != 0 {
					t.Fatalf("bare frame reader returned an invalid object: %v (%d left)", err, r.Len())
				}
			}
			_, _ = decodeEventFrame(frame)
		}
	})
}
