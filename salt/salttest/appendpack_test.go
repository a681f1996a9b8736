package salttest

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// packerEvent is the reference: packer over msgpack/v5, the path packEvent took before
// appendEvent.
func packerEvent(v any) ([]byte, error) { return pack(v, false) }

// TestAppendEventMatchesPacker: appendEvent writes exactly packer's bytes for every value it
// covers, at every length boundary of every header, and declines the rest.
func TestAppendEventMatchesPacker(t *testing.T) {
	deep := any("leaf")
	for range maxDepth - 1 {
		deep = []any{deep}
	}
	tooDeep := []any{deep}
	values := []any{
		nil, true, false, "", "a", "\xff\xfe not utf-8", []byte(nil), []byte{}, []byte{0, 1, 2},
		0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64,
		int8(-5), int16(300), int32(-70000), int64(1 << 40), uint(7), uint8(200), uint16(60000),
		uint32(1 << 31), uint64(math.MaxUint64), 0.0, math.Copysign(0, -1), 1.5, math.Inf(-1),
		float32(2.25), math.NaN(),
		(*omap)(nil), &omap{}, newOmap("cmd", "_return", "id", "m1", "success", true, "return", true),
		[]any{}, []any{1, "two", []any{3.0}}, []string{}, []string{"a", strings.Repeat("b", 40)},
		map[string]any{}, map[string]any{"z": 1, "a": []any{nil}, "\xff": "bin key"},
		deep, tooDeep,
		time.Date(2026, 12, 2, 1, 2, 3, 4000, time.UTC), extValue{Type: 79, Data: []byte("x")},
		[]map[string]any{{"a": 1}}, map[string]string{"k": "v"},
	}
	for _, n := range []int{15, 16, 31, 32, 255, 256, 65535, 65536} {
		values = append(values, strings.Repeat("s", n), []byte(strings.Repeat("b", n)),
			make([]any, n), make([]string, n))
		m := &omap{} // keys need not be distinct for the encoding; set would be quadratic
		for i := range n {
			m.keys, m.vals = append(m.keys, "k"), append(m.vals, i)
		}
		values = append(values, m)
	}
	for i, v := range values {
		want, wantErr := packerEvent(v)
		got, ok := appendEvent(nil, v)
		switch {
		case wantErr != nil && ok:
			t.Errorf("value %d (%T): packer refuses it (%v), appendEvent encoded it", i, v, wantErr)
		case wantErr == nil && ok && !bytes.Equal(got, want):
			t.Errorf("value %d (%T): appendEvent % x, packer % x", i, v, head(got), head(want))
		}
		packed, err := packEvent(v)
		if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(packed, want)) {
			t.Errorf("value %d (%T): packEvent differs from packer (err %v, want %v)", i, v, err, wantErr)
		}
	}
	if _, ok := appendEvent(nil, tooDeep); ok {
		t.Error("appendEvent encoded a value nested beyond maxDepth")
	}
	if _, ok := appendEvent(nil, time.Time{}); ok {
		t.Error("appendEvent encoded a time.Time (Salt's ext 78 is packer's)")
	}
}

func head(b []byte) []byte {
	if len(b) > 24 {
		return b[:24]
	}
	return b
}

// FuzzAppendEventMatchesPacker: any document the simulator decodes re-encodes through
// appendEvent exactly as through packer.
func FuzzAppendEventMatchesPacker(f *testing.F) {
	dir := filepath.Join("testdata", "eventbus")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Add([]byte{0x93, 0xc0, 0xc3, 0xd9, 0x01, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := unpack(b)
		if err != nil {
			return
		}
		want, wantErr := packerEvent(v)
		got, ok := appendEvent(nil, v)
		if ok && wantErr != nil {
			t.Fatalf("appendEvent encoded what packer refuses: %v", wantErr)
		}
		if ok && !bytes.Equal(got, want) {
			t.Fatalf("appendEvent % x\npacker      % x", got, want)
		}
	})
}

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
			packed, err := packerEvent(data)
			if err != nil {
				t.Fatal(err)
			}
			want, err := packerEvent(newOmap("head", &omap{}, "body", append([]byte(tag+"\n\n"), packed...)))
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

// TestReturnDataEncoding: a return's data encoded directly (appendReturnData) is exactly
// packEvent of the map the master builds (returnData plus _stamp), for every shape of return:
// outputter, failure text, metadata, arguments; and values it leaves to packer are declined.
func TestReturnDataEncoding(t *testing.T) {
	pub := Publication{JID: "20261202010203456789", Fun: "test.ping", User: "root"}
	apply := pub
	apply.Fun = "state.apply"
	md := newOmap("request", "r-1")
	cases := []struct {
		pub      Publication
		funArgs  []any
		metadata any
		ret      any
		retcode  int
	}{
		{pub, []any{}, nil, true, 0},
		{pub, []any{"a", newOmap("k", 1)}, md, "ERROR: simulated failure of test.ping", 1},
		{pub, nil, map[string]any{"not": "an omap: not sent"}, map[string]any{"x": []any{1.5, nil}}, 0},
		{apply, []any{"web"}, md, newOmap("file_|-f_|-/f_|-managed", newOmap("result", true)), 2},
		{pub, []any{}, nil, strings.Repeat("long ", 100), 0},
	}
	for _, at := range []time.Time{time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC),
		time.Date(2026, 12, 2, 1, 2, 3, 4000, time.FixedZone("x", 3600)), time.Now()} {
		if got, want := string(appendStamp(nil, at)), stamp(at); got != want {
			t.Errorf("appendStamp %q, stamp %q", got, want)
		}
		for i, c := range cases {
			got, ok := appendReturnData(nil, "m-0001", c.pub, c.funArgs, c.metadata, c.ret, c.retcode, at)
			if !ok {
				t.Fatalf("case %d: declined", i)
			}
			m := returnData("m-0001", c.pub, c.funArgs, c.metadata, c.ret, c.retcode)
			m.set("_stamp", stamp(at))
			want, err := packerEvent(m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("case %d at %v:\n got % x\nwant % x", i, at, got, want)
			}
		}
	}
	if _, ok := appendReturnData(nil, "m", pub, nil, nil, time.Now(), 0, time.Now()); ok {
		t.Error("a datetime return was encoded directly (Salt's ext 78 is packer's)")
	}
}
