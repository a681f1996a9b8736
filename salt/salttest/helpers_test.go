package salttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"
)

// Values from the capture lab (testdata/ holds its bytes).
const (
	labMinion   = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	labGhost    = "client-00000000-0000-4000-8000-000000000000"
	labRootKey  = "pyVdoNZfjUCc7FOMkV2EzSrPJEXlLxg721CxXWR3Wzg9/W/2a8C8cEaXVERMFSdZd5RIDRjOvt4="
	labUser     = "oduflow"
	labPassword = "labpass-0duflow"
	labToken    = "c4adf07f53cf8df74e0a15477fefa908bf879cb2a41b3be786a14d3555d35d47"
)

func labRoles() map[string]Outcome {
	return map[string]Outcome{
		"roles.client_stack":      Succeeds,
		"roles.client_production": Fails,
		"capture.broken_yaml":     RenderError,
		"capture.bad_require_in":  CompileError,
		"capture.missing_require": MissingRequisite,
	}
}

// labOptions configures the simulator like the capture lab.
func labOptions(t *testing.T) []Option {
	return []Option{
		WithDir(shortDir(t)),
		withRootKey(labRootKey),
		WithEauthUser("auto", labUser, "", LabACL()),
		WithEauthUser("file", labUser, labPassword, LabACL()),
		withToken(tokenData{Token: labToken, Name: labUser, Eauth: "file", Start: time.Now(),
			Expire: time.Now().Add(time.Hour)}),
	}
}

// shortDir is a temp dir with a short path (unix socket paths are limited to 108 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ss")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func startSim(t *testing.T, opts ...Option) *Master {
	t.Helper()
	s, err := Start(context.Background(), opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// startLab starts a lab-configured simulator with the lab minion.
func startLab(t *testing.T, opts ...Option) *Master {
	s := startSim(t, append(labOptions(t), opts...)...)
	s.AddMinion(labMinion, standard(labRoles()))
	return s
}

// reqResult is what a zmq4 REQ client got.
type reqResult struct {
	body  []byte
	pings int
}

// zreq sends body on a fresh zmq4 REQ socket and waits for the reply; ZMTP command messages
// (heartbeat PINGs) are counted and skipped.
func zreq(t *testing.T, addr string, body []byte, timeout time.Duration) (reqResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sock := zmq4.NewReq(ctx, zmq4.WithDialerRetry(20*time.Millisecond), zmq4.WithDialerMaxRetries(50))
	defer func() { _ = sock.Close() }()
	if err := sock.Dial(addr); err != nil {
		return reqResult{}, err
	}
	if err := sock.Send(zmq4.NewMsg(body)); err != nil {
		return reqResult{}, err
	}
	ch := make(chan reqResult, 1)
	errc := make(chan error, 1)
	go func() {
		pings := 0
		for {
			m, err := sock.Recv()
			if err != nil {
				errc <- err
				return
			}
			if m.Type == zmq4.CmdMsg {
				pings++
				continue
			}
			ch <- reqResult{body: m.Bytes(), pings: pings}
			return
		}
	}()
	select {
	case r := <-ch:
		return r, nil
	case err := <-errc:
		return reqResult{}, err
	case <-ctx.Done():
		return reqResult{}, ctx.Err()
	}
}

// envelope packs {enc: clear, load, version} in Salt's request dialect.
func envelope(t *testing.T, version int, kv ...any) []byte {
	t.Helper()
	b, err := packSalt(newOmap("enc", "clear", "load", newOmap(kv...), "version", version))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call sends a clear request (version 3) and decodes the reply.
func call(t *testing.T, s *Master, kv ...any) any {
	t.Helper()
	r, err := zreq(t, s.Addr(), envelope(t, 3, kv...), 5*time.Second)
	if err != nil {
		t.Fatalf("request %v: %v", kv[:2], err)
	}
	v, err := unpack(r.body)
	if err != nil {
		t.Fatalf("decode reply: %v", err)
	}
	return v
}

func publishLoad(fun string, tgt any, tgtType string, args []any, extra ...any) []any {
	kv := []any{"cmd", "publish", "tgt", tgt, "fun", fun, "arg", args, "key", labRootKey,
		"tgt_type", tgtType, "ret", "", "timeout", 5, "jid", "", "user", "root"}
	for i := 0; i+1 < len(extra); i += 2 {
		k := extra[i].(string)
		found := false
		for j := 0; j+1 < len(kv); j += 2 {
			if kv[j] == k {
				kv[j+1] = extra[i+1]
				found = true
			}
		}
		if !found {
			kv = append(kv, k, extra[i+1])
		}
	}
	return kv
}

// event is one decoded event-bus frame.
type event struct {
	tag  string
	data *omap
	body []byte
}

// evStream reads the event bus with an independent decoder (vmihailenco/msgpack) for the
// frame and the package decoder for the data (to keep key order).
type evStream struct {
	c   net.Conn
	r   *bufio.Reader
	dec *msgpack.Decoder
}

func dialEvents(t *testing.T, addr string) *evStream {
	t.Helper()
	network, path := "unix", strings.TrimPrefix(addr, "unix://")
	if strings.HasPrefix(addr, "tcp://") {
		network, path = "tcp", strings.TrimPrefix(addr, "tcp://")
	}
	c, err := net.Dial(network, path)
	if err != nil {
		t.Fatalf("dial events: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := bufio.NewReader(c)
	return &evStream{c: c, r: r, dec: msgpack.NewDecoder(r)}
}

type wireFrame struct {
	Head map[string]any `msgpack:"head"`
	Body []byte         `msgpack:"body"`
}

// next reads one frame, detecting the framing from its first byte.
func (e *evStream) next(timeout time.Duration) (event, error) {
	_ = e.c.SetReadDeadline(time.Now().Add(timeout))
	first, err := e.r.Peek(1)
	if err != nil {
		return event{}, err
	}
	var f wireFrame
	if first[0]&0xf0 == 0x80 || first[0] == 0xde || first[0] == 0xdf {
		err = e.dec.Decode(&f)
	} else {
		var n [4]byte
		if _, err = io.ReadFull(e.r, n[:]); err == nil {
			buf := make([]byte, binary.BigEndian.Uint32(n[:]))
			if _, err = io.ReadFull(e.r, buf); err == nil {
				err = msgpack.Unmarshal(buf, &f)
			}
		}
	}
	if err != nil {
		return event{}, err
	}
	i := bytes.Index(f.Body, []byte("\n\n"))
	if i < 0 {
		return event{}, io.ErrUnexpectedEOF
	}
	d, err := unpack(f.Body[i+2:])
	if err != nil {
		return event{}, err
	}
	m, _ := d.(*omap)
	return event{tag: string(f.Body[:i]), data: m, body: f.Body}, nil
}

// waitTag reads events until one has the tag (or a prefix match with a trailing '*').
func (e *evStream) waitTag(t *testing.T, tag string) event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ev, err := e.next(time.Until(deadline))
		if err != nil {
			t.Fatalf("waiting for %s: %v", tag, err)
		}
		if ev.tag == tag || (strings.HasSuffix(tag, "*") && strings.HasPrefix(ev.tag, tag[:len(tag)-1])) {
			return ev
		}
	}
	t.Fatalf("no event %s", tag)
	return event{}
}

func readTestdata(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mget(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		m, ok := v.(*omap)
		if !ok {
			t.Fatalf("not a map at %q: %s", p, pyRepr(v))
		}
		v, ok = m.Get(p)
		if !ok {
			t.Fatalf("no key %q in %s", p, pyRepr(m))
		}
	}
	return v
}

func mkdir(dir string) error { return os.MkdirAll(dir, 0o700) }

func readTestdataF(f *testing.F, parts ...string) []byte {
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// blockingHandler wraps h so that it waits until release is closed (or ctx ends), to simulate a
// state run that lasts as long as a test needs.
func blockingHandler(release <-chan struct{}, h MinionHandler) MinionHandler {
	return func(ctx context.Context, job Job) (any, int) {
		select {
		case <-release:
		case <-ctx.Done():
			return "killed", 1
		}
		return h(ctx, job)
	}
}
