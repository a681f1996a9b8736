package salttest

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// TestFrameMatchesPackedMap: the event bus's frame is packEvent of {"head": {}, "body": tag
// "\n\n" data}, with the length prefix under FramingLengthPrefixed, for data of every bin
// header size.
func TestFrameMatchesPackedMap(t *testing.T) {
	for _, framing := range []Framing{FramingBare, FramingLengthPrefixed} {
		b := &eventBus{framing: framing}
		for _, n := range []int{0, 10, 300, 70000} {
			data := newOmap("cmd", "_return", "return", strings.Repeat("r", n), "_stamp", "2026-12-02T01:02:03.000004")
			tag := "salt/job/20261202010203000004/ret/m1"
			got, err := b.frame(tag, data)
			if err != nil {
				t.Fatal(err)
			}
			packed, err := packEvent(data)
			if err != nil {
				t.Fatal(err)
			}
			want, err := packEvent(newOmap("head", &omap{}, "body", append([]byte(tag+"\n\n"), packed...)))
			if err != nil {
				t.Fatal(err)
			}
			if framing == FramingLengthPrefixed {
				want = append(binary.BigEndian.AppendUint32(nil, uint32(len(want))), want...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("framing %v, data %d bytes: frame % x, want % x", framing, n, head(got), head(want))
			}
		}
	}
}

func head(b []byte) []byte {
	if len(b) > 24 {
		return b[:24]
	}
	return b
}
