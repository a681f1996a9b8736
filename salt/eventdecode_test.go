package salt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// refDecodeEventFrame is DecodeEventFrame without the fast path.
func refDecodeEventFrame(frame []byte) (Event, error) {
	body, err := frameBody(frame, defaultEventDecodeLimits())
	if err != nil {
		return Event{}, err
	}
	return decodeEventBody(body, defaultEventDecodeLimits())
}

// sameValue is reflect.DeepEqual with NaN equal to the same NaN.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case saltConstant:
		y, ok := b.(saltConstant)
		return ok && x.Name == y.Name && sameValue(x.Value, y.Value)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y) && x.Location() == y.Location()
	}
	return reflect.DeepEqual(a, b)
}

func sameEvent(t *testing.T, got, want Event) {
	t.Helper()
	if got.Kind() != want.Kind() || got.Tag != want.Tag || !sameValue(got.Data, want.Data) {
		t.Fatalf("fast %v %q %v\nref  %v %q %v", got.Kind(), got.Tag, got.Data, want.Kind(), want.Tag, want.Data)
	}
	if (got.JobReturn == nil) != (want.JobReturn == nil) || (got.JobNew == nil) != (want.JobNew == nil) {
		t.Fatal("typed event differs")
	}
	if r := got.JobReturn; r != nil {
		w := want.JobReturn
		if r.JID != w.JID || r.MinionID != w.MinionID || r.Fun != w.Fun || r.Retcode != w.Retcode || r.Success != w.Success ||
			r.Out != w.Out || !sameValue(r.Return, w.Return) || !sameValue(r.FunArgs, w.FunArgs) {
			t.Fatalf("JobReturn %+v\nwant %+v", r, w)
		}
	}
	if n := got.JobNew; n != nil {
		if !reflect.DeepEqual(n, want.JobNew) && !sameValue(n.Args, want.JobNew.Args) {
			t.Fatalf("JobNew %+v\nwant %+v", n, want.JobNew)
		}
	}
}

// checkFastDecode: the fast path accepts exactly what the reference decoder
// accepts, with the same event.
func checkFastDecode(t *testing.T, frame []byte) {
	fast, fok := fastDecodeEventFrame(frame)
	ref, err := refDecodeEventFrame(frame)
	if fok != (err == nil) {
		t.Fatalf("fast ok=%v, reference err=%v", fok, err)
	}
	if fok {
		sameEvent(t, fast, ref)
	}
}

func eventFrameSeeds(t testing.TB) [][]byte {
	files, _ := filepath.Glob(filepath.Join(vectorDir, "eventbus", "event_*.frame.bin"))
	var out [][]byte
	for _, f := range files {
		out = append(out, readVector(t, "eventbus/"+filepath.Base(f)))
	}
	return out
}

func TestFastEventDecodeMatchesReference(t *testing.T) {
	t.Parallel()
	frames := eventFrameSeeds(t)
	for _, f := range frames {
		checkFastDecode(t, f)
		// every truncation and a few byte flips
		for i := range f {
			checkFastDecode(t, f[:i])
			for _, x := range []byte{0x00, 0xc1, 0xff, 0x7f, 0x80, 0xdc, 0xdf, 0xc7, 0xd4} {
				g := append([]byte(nil), f...)
				g[i] = x
				checkFastDecode(t, g)
			}
		}
	}
	// tolerance cases
	data := []byte{0x85, // map of 5
		0x01, 0xa1, 'a', // int key
		0xc3, 0xc0, // True: nil
		0xc0, 0xc4, 0x02, 0xff, 0xfe, // None: bin non-UTF-8
		0xa3, 'e', 'x', 't', 0xd4, 0x05, 0x01, // ext 5
		0xa1, 'c', 0xc7, 0x04, 79, 0x92, 0xa1, 'N', 0xc0, // ext 79 constant
	}
	body := append([]byte("salt/job/20261129154606042846/ret/m\n\n"), data...)
	frame := append([]byte{0x82, 0xa4, 'h', 'e', 'a', 'd', 0x80, 0xa4, 'b', 'o', 'd', 'y', 0xc5}, byte(len(body)>>8), byte(len(body)))
	frame = append(frame, body...)
	checkFastDecode(t, frame)
	ev, err := decodeEventFrame(frame)
	if err != nil || ev.Kind() != EventJobReturn || ev.Data["1"] != "a" || ev.Data["True"] != nil || ev.Data["None"] != "\xff\xfe" {
		t.Fatalf("%v %+v", err, ev)
	}
	if c, ok := ev.Data["c"].(saltConstant); !ok || c.Name != "N" {
		t.Fatalf("constant %#v", ev.Data["c"])
	}

}

// FuzzFastEventDecodeMatches: the fast decoder and the reference decoder
// agree on every input.
func FuzzFastEventDecodeMatches(f *testing.F) {
	for _, fr := range eventFrameSeeds(f) {
		f.Add(fr)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFastDecode(t, b) })
}

// checkFraming: the buffered frame reader yields the same frames and the
// same errors as the copying reader, for any buffer size.
func checkFraming(t *testing.T, b []byte, size, limit int) {
	fast := &frameReader{br: bufio.NewReaderSize(bytes.NewReader(b), size), max: limit}
	ref := &frameReader{br: bufio.NewReaderSize(bytes.NewReader(b), size), max: limit}
	for i := 0; i < 200; i++ {
		f1, err1 := fast.next()
		f2, err2 := ref.nextCopy()
		if !bytes.Equal(f1, f2) || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("frame %d: fast %x %v\nref %x %v", i, f1, err1, f2, err2)
		}
		if err1 != nil {
			return
		}
	}
}

func FuzzFrameReaderMatches(f *testing.F) {
	raw := readVector(f, "eventbus/eventbus.raw")
	f.Add(raw[:3000], uint16(100), uint16(4096))
	frame := readVector(f, "eventbus/event_new.frame.bin")
	f.Add(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...), uint16(16), uint16(300))
	f.Fuzz(func(t *testing.T, b []byte, size, limit uint16) {
		checkFraming(t, b, max(16, int(size)), max(16, int(limit)))
	})
}

func TestFrameReaderMatches(t *testing.T) {
	t.Parallel()
	raw := readVector(t, "eventbus/eventbus.raw")
	for _, size := range []int{16, 100, 1000, 4096, 65536} {
		for _, limit := range []int{16, 300, 1 << 20} {
			checkFraming(t, raw, size, limit)
			checkFraming(t, raw[:len(raw)/2], size, limit)
		}
	}
}
