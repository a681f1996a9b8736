package salt

import (
	"bytes"
	"encoding/hex"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/vmihailenco/msgpack/v5"
)

func TestEncodeSaltDialect(t *testing.T) {
	t.Parallel()
	cases := []struct {
		v    any
		want string
	}{
		{nil, "c0"}, {true, "c3"}, {false, "c2"},
		{0, "00"}, {127, "7f"}, {128, "cc80"}, {255, "ccff"}, {256, "cd0100"}, {4505, "cd1199"},
		{65536, "ce00010000"}, {int64(math.MaxUint32) + 1, "cf0000000100000000"}, {uint64(math.MaxUint64), "cfffffffffffffffff"},
		{-1, "ff"}, {-32, "e0"}, {-33, "d0df"}, {-128, "d080"}, {-129, "d1ff7f"}, {-32769, "d2ffff7fff"},
		{int64(math.MinInt64), "d38000000000000000"},
		{1.5, "cb3ff8000000000000"}, {float32(1.5), "cb3ff8000000000000"},
		{"", "a0"}, {"abc", "a3616263"},
		{strings.Repeat("x", 31), "bf" + strings.Repeat("78", 31)},
		{strings.Repeat("x", 32), "da0020" + strings.Repeat("78", 32)}, // never str8
		{strings.Repeat("x", 255), "da00ff" + strings.Repeat("78", 255)},
		{[]byte{0xff, 0x00}, "a2ff00"}, // bytes travel as str, never bin
		{[]any{}, "90"}, {[]string{"a"}, "91a161"}, {[]int{1, 2}, "920102"},
		{map[string]any{"b": 1, "a": 2}, "82a16102a16201"}, // plain maps: sorted
		{newOrderedMap().Set("b", 1).Set("a", 2), "82a16201a16102"},
		{newOrderedMap().Set("b", 1).Set("a", 2).Set("b", 3), "82a16203a16102"}, // a set key keeps its place
		{map[string]string{"k": "v"}, "81a16ba176"},
		{JID("20261129154606042846"), "b4" + hex.EncodeToString([]byte("20261129154606042846"))},
	}
	for _, c := range cases {
		got, err := encodeValue(c.v)
		if err != nil {
			t.Fatalf("%v: %v", c.v, err)
		}
		if h := hex.EncodeToString(got); !strings.HasPrefix(h, c.want) || len(h) != len(c.want) {
			t.Errorf("%#v: got %s want %s", c.v, h, c.want)
		}
	}
	long := strings.Repeat("y", 70000)
	got, _ := encodeValue(long)
	if !bytes.HasPrefix(got, []byte{0xdb, 0, 1, 0x11, 0x70}) {
		t.Fatalf("str32 header %x", got[:5])
	}
	for _, bad := range []any{struct{}{}, make(chan int), func() {}, &struct{}{}} {
		if _, err := encodeValue(bad); !errors.Is(err, errUnsupportedType) {
			t.Errorf("%T accepted: %v", bad, err)
		}
	}
	// what salt.payload also packs: a datetime as ext 78, a dict with int keys
	at := time.Date(2026, 12, 4, 1, 2, 3, 4000, time.UTC)
	if got, _ := encodeValue(at); hex.EncodeToString(got) != "c7184e"+hex.EncodeToString([]byte("20261204T01:02:03.000004")) {
		t.Errorf("datetime: %x", got)
	}
	if got, _ := encodeValue(map[int]int{2: 20, 1: 10}); hex.EncodeToString(got) != "82010a0214" {
		t.Errorf("int keys: %x", got)
	}
	deep := any("x")
	for i := 0; i < 200; i++ {
		deep = []any{deep}
	}
	if _, err := encodeValue(deep); !errors.Is(err, errUnsupportedType) {
		t.Fatal("unbounded nesting")
	}
}

// TestEncodeRoundTripThroughVmihailenco cross-checks the encoder with an
// independent decoder.
func TestEncodeRoundTripThroughVmihailenco(t *testing.T) {
	t.Parallel()
	v := newOrderedMap().Set("s", strings.Repeat("é", 40)).Set("n", -70000).Set("f", 0.25).
		Set("a", []any{nil, true, uint16(65535), map[string]any{"k": []string{"x"}}})
	b, err := encodeValue(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := msgpack.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out["s"] != strings.Repeat("é", 40) || out["f"] != 0.25 {
		t.Fatalf("%v", out)
	}
	mine, err := decodeValue(b)
	if err != nil || mine.(map[string]any)["n"] != int64(-70000) {
		t.Fatalf("%v %v", mine, err)
	}
}

func TestDecodeTolerant(t *testing.T) {
	t.Parallel()
	// {1: "x", True: nil, "raw": <non-UTF-8 str>, "bin": <bin>, "dt": ext78, "c": ext79, "ts": ext-1, "e": ext5}
	var b []byte
	b = append(b, 0x88, 0x01, 0xa1, 'x', 0xc3, 0xc0)
	b = append(b, 0xa3, 'r', 'a', 'w', 0xa2, 0xff, 0xfe)
	b = append(b, 0xa3, 'b', 'i', 'n', 0xc4, 0x02, 0x00, 0x01)
	dt := "20261129T15:46:06.637970"
	b = append(b, 0xa2, 'd', 't', 0xc7, byte(len(dt)), 78)
	b = append(b, dt...)
	inner, _ := msgpack.Marshal([]any{"NOT_SET", nil})
	b = append(b, 0xa1, 'c', 0xc7, byte(len(inner)), 79)
	b = append(b, inner...)
	b = append(b, 0xa2, 't', 's', 0xd6, 0xff, 0, 0, 0, 10)
	b = append(b, 0xa1, 'e', 0xd4, 5, 7)
	v, err := decodeValue(b)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	wantT := time.Date(2026, 11, 29, 15, 46, 6, 637970000, time.UTC)
	if m["1"] != "x" || m["True"] != nil || m["raw"] != "\xff\xfe" || m["bin"] != "\x00\x01" ||
		!m["dt"].(time.Time).Equal(wantT) || m["c"] != (saltConstant{Name: "NOT_SET"}) ||
		!m["ts"].(time.Time).Equal(time.Unix(10, 0)) {
		t.Fatalf("%#v", m)
	}
	if e := m["e"].(extValue); e.Type != 5 || !bytes.Equal(e.Data, []byte{7}) {
		t.Fatalf("ext %#v", e)
	}
	if _, ok := m["True"]; !ok {
		t.Fatal("bool key lost")
	}
}

func TestDecodeRejectsWithoutHugeAllocations(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"", "c1", "dbffffffff", "dfffffffff", "ddffffffff", "c9ffffffff01", "a5616263",
		"82a161", "0000", "91" + strings.Repeat("91", 300) + "c0", "81" + "90" + "c0"} {
		b, _ := hex.DecodeString(h)
		if _, err := decodeValue(b); !errors.Is(err, errMsgpack) {
			t.Errorf("%s: %v", h, err)
		}
	}
}
