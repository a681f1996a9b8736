package salt

import (
	"encoding/binary"
	"runtime"
	"testing"
)

// A map header announces its entry count; a document of duplicate keys must not make the decoder
// preallocate a map of that size (it used to cost 40 bytes per 2 input bytes). n pairs are 2n
// decoded values: within the default element budget.
func TestDecodeDuplicateKeyMapDoesNotPreallocate(t *testing.T) {
	const n = defaultReplyDecodeMaxElements/2 - 1
	b := []byte{0xdf}
	b = binary.BigEndian.AppendUint32(b, n)
	for i := 0; i < n; i++ {
		b = append(b, 0xa0, 0xc0) // "": nil, again and again
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v, err := decodeValue(b)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := v.(map[string]any); !ok || len(m) != 1 {
		t.Fatalf("decoded %T of %d entries, want one entry", v, len(v.(map[string]any)))
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Fatalf("decoding %d bytes allocated %d MiB", len(b), got>>20)
	}
}
