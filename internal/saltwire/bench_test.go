package saltwire

import (
	"os"
	"path/filepath"
	"testing"
)

// eventLimits are the event reader's default limits (package salt's).
var eventLimits = Limits{MaxElements: 1 << 20, MaxBytes: 8 << 20, MaxDepth: 256}

func returnFrames(b *testing.B) [][]byte {
	files, _ := filepath.Glob("../../salt/testdata/vectors/eventbus/event_ret_*.frame.bin")
	var frames [][]byte
	for _, f := range files {
		fr, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		frames = append(frames, fr)
	}
	if len(frames) == 0 {
		b.Fatal("no captured return frames")
	}
	return frames
}

// BenchmarkEventDecode is the row that decides whether the event reader keeps its fast path
// (SplitEventFrame + DecodeEventData over one string) beside the reference (EventFrameBody +
// Decode): both decode the captured salt/job/<jid>/ret frames of Salt 3006 from their bytes, as
// the reader gets them.
func BenchmarkEventDecode(b *testing.B) {
	frames := returnFrames(b)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		bud := new(Budget)
		for i := 0; b.Loop(); i++ {
			s := string(frames[i%len(frames)])
			bud.Reset(eventLimits)
			sp, ok := SplitEventFrame(s, bud)
			if !ok {
				b.Fatal("split refused a captured frame")
			}
			if _, ok, _ := DecodeEventData(s, sp, bud); !ok {
				b.Fatal("fast path refused a captured frame")
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			body, err := EventFrameBody(frames[i%len(frames)], eventLimits)
			if err != nil {
				b.Fatal(err)
			}
			for j := 0; j+1 < len(body); j++ {
				if body[j] == '\n' && body[j+1] == '\n' {
					if _, _, err := Decode(body[j+2:], eventLimits); err != nil {
						b.Fatal(err)
					}
					break
				}
			}
		}
	})
}

// BenchmarkAppendRequest encodes a publish load in the request dialect.
func BenchmarkAppendRequest(b *testing.B) {
	load := NewOrderedMap(12).Set("cmd", "publish").Set("tgt", []string{"m1"}).Set("fun", "state.apply").
		Set("arg", []any{"roles.client_stack", NewOrderedMap(2).Set("__kwarg__", true).Set("test", true)}).
		Set("key", "pyVdoNZfjUCc7FOMkV2EzSrPJEXlLxg721CxXWR3Wzg9/W/2a8C8cEaXVERMFSdZd5RIDRjOvt4=").
		Set("tgt_type", "list").Set("ret", "").Set("jid", "20261129154606042846").Set("user", "root").
		Set("kwargs", map[string]any{"metadata": map[string]any{"request_id": "x"}})
	b.ReportAllocs()
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		var err error
		if buf, err = Append(buf[:0], Request, load); err != nil {
			b.Fatal(err)
		}
	}
}
