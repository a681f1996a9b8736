package salttest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// volatile keys: values that differ between runs (compared by type only).
var volatile = map[string]bool{"jid": true, "tag": true, "_stamp": true, "start": true, "expire": true,
	"token": true, "start_time": true, "duration": true, "pid": true, "StartTime": true}

// shape renders a decoded document with its key order and value types; volatile values are
// reduced to their type.
func shape(v any, key string) string {
	if volatile[key] {
		return fmt.Sprintf("<%T>", v)
	}
	switch x := v.(type) {
	case *omap:
		parts := make([]string, x.Len())
		for i, k := range x.Keys {
			ks := keyString(k)
			parts[i] = strconv.Quote(ks) + ":" + shape(x.Vals[i], ks)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, el := range x {
			parts[i] = shape(el, "")
		}
		return "[" + strings.Join(parts, ",") + "]"
	case string:
		return strconv.Quote(x)
	case []byte:
		return "bin:" + strconv.Quote(string(x))
	}
	return fmt.Sprintf("%T:%v", v, v)
}

// kinds lists the msgpack format codes that appear in a document, by family.
func kinds(t *testing.T, b []byte) map[string]int {
	t.Helper()
	out := map[string]int{}
	onCode := func(c byte) {
		switch {
		case c >= 0xa0 && c <= 0xbf:
			out["fixstr"]++
		case c == 0xd9:
			out["str8"]++
		case c == 0xda || c == 0xdb:
			out["str16/32"]++
		case c >= 0xc4 && c <= 0xc6:
			out["bin"]++
		}
	}
	if _, _, err := saltwire.DecodeOrdered(b, decodeLimits, onCode); err != nil {
		t.Fatal(err)
	}
	return out
}

func clearFiles(t *testing.T, suffix string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "clear", "*"+suffix))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	sort.Strings(files)
	return files
}

// TestVectorsRoundTrip: the package decoder and encoder reproduce every captured document
// byte for byte (request-channel dialect for clear/, event dialect for the bus).
func TestVectorsRoundTrip(t *testing.T) {
	for _, f := range clearFiles(t, ".bin") {
		b, _ := os.ReadFile(f)
		v, err := unpack(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out, err := packSalt(v)
		if err != nil || !bytes.Equal(out, b) {
			t.Errorf("%s: re-encoding differs (err %v)", f, err)
		}
	}
	raw := readTestdata(t, "eventbus", "eventbus.raw")
	n := 0
	for off := 0; off < len(raw); n++ {
		v, n, err := unpackPrefix(raw[off:])
		if err != nil {
			t.Fatalf("frame at %d: %v", off, err)
		}
		frame := raw[off : off+n]
		off += n
		out, err := packEvent(v)
		if err != nil || !bytes.Equal(out, frame) {
			t.Fatalf("frame %d: re-encoding differs (err %v)", n, err)
		}
		body := mget(t, v, "body").([]byte)
		i := bytes.Index(body, []byte("\n\n"))
		data, err := unpack(body[i+2:])
		if err != nil {
			t.Fatalf("frame %d data: %v", n, err)
		}
		if out, _ := packEvent(data); !bytes.Equal(out, body[i+2:]) {
			t.Errorf("frame %d data re-encoding differs", n)
		}
	}
	if n != 64 {
		t.Errorf("frames = %d, want 64", n)
	}
	frames, _ := filepath.Glob(filepath.Join("testdata", "eventbus", "event_*.frame.bin"))
	for _, f := range frames {
		b, _ := os.ReadFile(f)
		v, err := unpack(b)
		if err != nil || !bytes.Contains(raw, b) {
			t.Errorf("%s: %v (or not in the stream)", f, err)
			continue
		}
		if out, _ := packEvent(v); !bytes.Equal(out, b) {
			t.Errorf("%s: re-encoding differs", f)
		}
	}
	if len(frames) != 14 {
		t.Errorf("event frame files = %d", len(frames))
	}
}

// capturedEvents decodes testdata/eventbus/eventbus.raw into events.
func capturedEvents(t *testing.T) []event {
	t.Helper()
	raw := readTestdata(t, "eventbus", "eventbus.raw")
	var out []event
	for off := 0; off < len(raw); {
		v, n, err := unpackPrefix(raw[off:])
		if err != nil {
			t.Fatal(err)
		}
		off += n
		body := mget(t, v, "body").([]byte)
		i := bytes.Index(body, []byte("\n\n"))
		data, _ := unpack(body[i+2:])
		out = append(out, event{tag: string(body[:i]), data: data.(*omap), body: body})
	}
	return out
}

var jidRe = regexp.MustCompile(`\b\d{20}\b`)

// eventKey normalises an event for comparison: preassigned jids stay, generated ones become
// <jid>; the content of jobs.list_jobs differs by design (other jobs ran in the lab).
func eventKey(ev event, preassigned map[string]bool) string {
	tag := jidRe.ReplaceAllStringFunc(ev.tag, func(j string) string {
		if preassigned[j] {
			return j
		}
		return "<jid>"
	})
	data := ev.data.Clone()
	if f, _ := data.Str("fun"); f == "runner.jobs.list_jobs" && data.Has("return") {
		data.Set("return", "<jobs>")
	}
	return tag + " " + shape(data, "")
}

// TestGoldenClearReplies feeds every captured request to the simulator over a real socket
// (zmq4 REQ) and compares each reply with the captured reply: same key order, same types,
// same values except jids, tags, timestamps and tokens. It also compares every event fired
// during the run with the captured event stream.
func TestGoldenClearReplies(t *testing.T) {
	fastSleep := func(ctx context.Context, job Job) (any, int) {
		n, _ := job.Args[0].(int64)
		select {
		case <-time.After(time.Duration(n) * 50 * time.Millisecond):
		case <-ctx.Done():
		}
		return true, 0
	}
	s := startSim(t, labOptions(t)...)
	s.AddMinion(labMinion, functions(map[string]MinionHandler{
		"test.ping": testPing(), "test.sleep": fastSleep,
		"state.apply": stateApply(labRoles(), false), "state.high": stateHigh(),
	}))
	evs := dialEvents(t, s.EventsAddr())
	var (
		mu  sync.Mutex
		got []event
	)
	arrived := make(chan struct{}, 1) // a wake-up for the comparison below after each event read
	go func() {
		for {
			ev, err := evs.next(30 * time.Second)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
			select {
			case arrived <- struct{}{}:
			default:
			}
		}
	}()
	waitReaders(t, s, 1)

	preassigned := map[string]bool{}
	for _, f := range clearFiles(t, ".request.bin") {
		name := strings.TrimSuffix(filepath.Base(f), ".request.bin")
		req, _ := os.ReadFile(f)
		want := readTestdata(t, "clear", name+".reply.bin")
		if v, err := unpack(req); err == nil {
			if j, ok := mget(t, v, "load").(*omap).Str("jid"); ok && j != "" {
				preassigned[j] = true
			}
		}
		if name == "09c_publish_find_job_finished" {
			waitIdle(t, s, labMinion)
		}
		r, err := zreq(t, s.Addr(), req, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		gv, err := unpack(r.body)
		if err != nil {
			t.Fatalf("%s: reply does not decode: %v", name, err)
		}
		wv, _ := unpack(want)
		if g, w := shape(gv, ""), shape(wv, ""); g != w {
			t.Errorf("%s:\n got %s\nwant %s", name, g, w)
		}
		gk, wk := kinds(t, r.body), kinds(t, want)
		if gk["str8"] != 0 || gk["bin"] != 0 || wk["str8"] != 0 || wk["bin"] != 0 {
			t.Errorf("%s: str8/bin in a request-channel reply: %v", name, gk)
		}
	}
	waitIdle(t, s, labMinion)

	var want []string
	for _, ev := range capturedEvents(t) {
		if !strings.HasPrefix(ev.tag, "minion/refresh/") {
			want = append(want, eventKey(ev, preassigned))
		}
	}
	deadline := time.After(5 * time.Second)
	var have []string
	for waiting := true; waiting; {
		mu.Lock()
		have = have[:0]
		for _, ev := range got {
			have = append(have, eventKey(ev, preassigned))
		}
		mu.Unlock()
		if len(have) >= len(want) {
			break
		}
		select {
		case <-arrived:
		case <-deadline:
			waiting = false
		}
	}
	sort.Strings(want)
	sort.Strings(have)
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf("event streams differ (%d simulated, %d captured)", len(have), len(want))
		for i := 0; i < len(have) || i < len(want); i++ {
			var h, w string
			if i < len(have) {
				h = have[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if h != w {
				t.Logf("first difference:\n got %s\nwant %s", h, w)
				break
			}
		}
	}
}

// waitSim waits (5 s at most) for cond over the simulator's state, woken by its changes (WaitUntil).
func waitSim(t *testing.T, s *Master, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := s.WaitUntil(ctx, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func waitIdle(t *testing.T, s *Master, id string) {
	t.Helper()
	waitSim(t, s, "minion still running", func() bool { return len(s.runningJIDs(id)) == 0 })
}

func waitReaders(t *testing.T, s *Master, n int) {
	t.Helper()
	waitSim(t, s, fmt.Sprintf("event readers, want %d", n), func() bool { return s.EventReaders() >= n })
}

// TestGoldenZMTPStream replays the captured client byte stream of scenario 01 (greeting,
// READY, request) on a raw TCP connection: the simulator's byte stream equals the captured
// master's, byte for byte (same greeting, READY ROUTER, and reply: the JID was preassigned).
func TestGoldenZMTPStream(t *testing.T) {
	s := startLab(t)
	c2s := readTestdata(t, "wire", "zmtp_req_publish.c2s.raw")
	s2c := readTestdata(t, "wire", "zmtp_req_publish.s2c.raw")
	c, err := net.Dial("tcp", strings.TrimPrefix(s.Addr(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Write(c2s); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(s2c))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read %d bytes: %v", len(s2c), err)
	}
	if !bytes.Equal(got, s2c) {
		t.Errorf("server stream differs:\n got %x\nwant %x", got, s2c)
	}
	if n := s.PublicationCount("test.ping", ""); n != 1 {
		t.Errorf("publications = %d", n)
	}
}
