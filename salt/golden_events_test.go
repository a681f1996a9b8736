package salt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type eventView struct {
	Tag  string         `json:"tag"`
	Data map[string]any `json:"data"`
}

// TestGoldenEventFrames decodes every captured event frame into the typed
// values and compares the data with the capture's decoded view.
func TestGoldenEventFrames(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join(vectorDir, "eventbus", "event_*.frame.bin"))
	if len(files) != 14 {
		t.Fatalf("want 14 frames, found %d", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".frame.bin")
		t.Run(name, func(t *testing.T) {
			frame := readVector(t, "eventbus/"+name+".frame.bin")
			ev, err := decodeEventFrame(frame)
			if err != nil {
				t.Fatal(err)
			}
			var view eventView
			if err := json.Unmarshal(readVector(t, "eventbus/"+name+".json"), &view); err != nil {
				t.Fatal(err)
			}
			if ev.Tag != view.Tag {
				t.Fatalf("tag %q want %q", ev.Tag, view.Tag)
			}
			if got := jsonNormal(t, ev.Data); !reflect.DeepEqual(got, jsonNormal(t, view.Data)) {
				t.Fatalf("data %v\nwant %v", got, view.Data)
			}
			// the bare-framing reader must take exactly this frame from a stream
			fr := &frameReader{br: bufio.NewReader(bytes.NewReader(frame)), max: 1 << 20}
			got, err := fr.next()
			if err != nil || !bytes.Equal(got, frame) || fr.framing != framingBare {
				t.Fatalf("stream read: %v framing %v", err, fr.framing)
			}
			checkTypedEvent(t, name, ev)
		})
	}
}

func checkTypedEvent(t *testing.T, name string, ev Event) {
	t.Helper()
	const minion = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	if strings.HasPrefix(name, "event_new") {
		n := ev.JobNew
		if ev.Kind() != EventJobNew || n == nil || n.Fun == "" || len(n.Minions) != 1 || n.Minions[0] != minion ||
			n.TgtType != "list" || n.User != "root" || "salt/job/"+string(n.JID)+"/new" != ev.Tag {
			t.Fatalf("job new %+v", n)
		}
		if name == "event_new_state_high" {
			if n.Fun != "state.high" || len(n.Args) != 1 {
				t.Fatalf("state.high args %v", n.Args)
			}
			if _, ok := n.Args[0].(map[string]any)["lab_high_ok"]; !ok {
				t.Fatalf("high data %v", n.Args[0])
			}
		}
		return
	}
	r := ev.JobReturn
	if ev.Kind() != EventJobReturn || r == nil || r.MinionID != minion || r.Fun == "" {
		t.Fatalf("job return %+v", r)
	}
	want := map[string]struct {
		retcode int
		success bool
		check   func(any) bool
	}{
		"event_ret_test_ping":                {0, true, func(v any) bool { return v == true }},
		"event_ret_test_ping_partly_unknown": {0, true, func(v any) bool { return v == true }},
		"event_ret_test_sleep":               {0, true, func(v any) bool { return v == true }},
		"event_ret_find_job_finished":        {0, true, func(v any) bool { m, ok := v.(map[string]any); return ok && len(m) == 0 }},
		"event_ret_find_job_running": {0, true, func(v any) bool {
			m, ok := v.(map[string]any)
			return ok && m["fun"] == "test.sleep" && m["arg"].([]any)[0] == int64(6)
		}},
		"event_ret_state_apply_client_stack":           {0, true, func(v any) bool { return countResults(v, true) == 3 }},
		"event_ret_state_apply_client_production":      {2, false, func(v any) bool { return countResults(v, false) == 1 }},
		"event_ret_state_apply_render_error":           {1, false, func(v any) bool { a, ok := v.([]any); return ok && len(a) == 1 }},
		"event_ret_state_apply_compile_error":          {1, false, func(v any) bool { a, ok := v.([]any); return ok && len(a) == 1 }},
		"event_ret_state_apply_missing_requisite":      {2, false, func(v any) bool { return countResults(v, false) == 1 }},
		"event_ret_state_apply_client_stack_test_mode": {0, true, func(v any) bool { return countResults(v, nil) == 1 && countResults(v, true) == 2 }},
		"event_ret_state_high":                         {0, true, func(v any) bool { return countResults(v, true) == 1 }},
	}[name]
	if want.check == nil {
		t.Fatalf("no expectation for %s", name)
	}
	if r.Retcode != want.retcode || r.Success != want.success || !want.check(r.Return) {
		t.Fatalf("return %s: retcode %d success %v return %v", name, r.Retcode, r.Success, r.Return)
	}
}

// countResults counts state entries whose result equals want (true, false, nil).
func countResults(v any, want any) int {
	m, ok := v.(map[string]any)
	if !ok {
		return -1
	}
	n := 0
	for _, e := range m {
		em, ok := e.(map[string]any)
		if !ok {
			return -1
		}
		if r, ok := em["result"]; ok && r == want {
			n++
		}
	}
	return n
}

// TestGoldenEventStream reads both captured streams (unix and tcp mode) with
// the bare framing, and the same frames re-framed with length prefixes.
func TestGoldenEventStream(t *testing.T) {
	t.Parallel()
	for _, rel := range []string{"eventbus/eventbus.raw", "eventbus/tcp_mode/eventbus.raw"} {
		raw := readVector(t, rel)
		var views []eventView
		if err := json.Unmarshal(readVector(t, strings.TrimSuffix(rel, ".raw")+".decoded.json"), &views); err != nil {
			t.Fatal(err)
		}
		frames := readAllFrames(t, raw, framingBare)
		if len(frames) != len(views) || len(frames) != 64 {
			t.Fatalf("%s: %d frames, %d views", rel, len(frames), len(views))
		}
		var prefixed []byte
		for i, f := range frames {
			ev, err := decodeEventFrame(f)
			if err != nil {
				t.Fatalf("%s frame %d: %v", rel, i, err)
			}
			if ev.Tag != views[i].Tag || !reflect.DeepEqual(jsonNormal(t, ev.Data), jsonNormal(t, views[i].Data)) {
				t.Fatalf("%s frame %d differs", rel, i)
			}
			prefixed = append(prefixed, byte(len(f)>>24), byte(len(f)>>16), byte(len(f)>>8), byte(len(f)))
			prefixed = append(prefixed, f...)
		}
		again := readAllFrames(t, prefixed, framingLengthPrefixed)
		if !reflect.DeepEqual(again, frames) {
			t.Fatalf("%s: length-prefixed re-read differs", rel)
		}
	}
}

func readAllFrames(t *testing.T, stream []byte, want frameFormat) [][]byte {
	t.Helper()
	fr := &frameReader{br: bufio.NewReader(bytes.NewReader(stream)), max: 1 << 20}
	var out [][]byte
	for {
		f, err := fr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d frames: %v", len(out), err)
		}
		out = append(out, f)
	}
	if fr.framing != want {
		t.Fatalf("framing %v want %v", fr.framing, want)
	}
	return out
}
