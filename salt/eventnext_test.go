package salt

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

// The vectors in testdata/vectors/eventbus_3009 were read from the event bus
// of a later Salt master (reports 3009.0: upstream after 3007.1) during one
// `salt <minion> test.ping`: salt/job/<jid>/new, the new
// salt/job/<jid>/publish, and the minion's return.

// TestGolden3009PublishEventIsNeverAReturn decodes the captured publish event:
// it is a JobPublish (a trace of the publish), never a JobReturn.
func TestGolden3009PublishEventIsNeverAReturn(t *testing.T) {
	t.Parallel()
	frame := readVector(t, "eventbus_3009/event_publish.frame.bin")
	ev, err := decodeEventFrame(frame)
	if err != nil {
		t.Fatal(err)
	}
	var view eventView
	if err := json.Unmarshal(readVector(t, "eventbus_3009/event_publish.json"), &view); err != nil {
		t.Fatal(err)
	}
	if ev.Tag != view.Tag || !strings.HasSuffix(ev.Tag, "/publish") {
		t.Fatalf("tag %q want %q", ev.Tag, view.Tag)
	}
	if got := jsonNormal(t, ev.Data); !reflect.DeepEqual(got, jsonNormal(t, view.Data)) {
		t.Fatalf("data %v\nwant %v", got, view.Data)
	}
	if ev.Kind() != EventJobPublish || ev.JobReturn != nil || ev.JobNew != nil || ev.Gap != nil {
		t.Fatalf("kind %v: %+v", ev.Kind(), ev)
	}
	p := ev.JobPublish
	if "salt/job/"+string(p.JID)+"/publish" != ev.Tag || p.Fun != "test.ping" || p.TgtType != "glob" || p.User != "root" ||
		p.Target != "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b" || len(p.Args) != 0 || ev.Peer != "" {
		t.Fatalf("publish %+v", p)
	}
}

// TestGolden3009StreamOneReturnPerJob reads the captured stream (new,
// publish, return) through a real unix socket: exactly one return.
func TestGolden3009StreamOneReturnPerJob(t *testing.T) {
	t.Parallel()
	raw := readVector(t, "eventbus_3009/eventbus.raw")
	s, err := SubscribeEvents(context.Background(), serveRaw(t, raw), WithTagPrefixes("salt/job/"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kinds := []EventKind{}
	for len(kinds) < 3 {
		kinds = append(kinds, next(t, s).Kind())
	}
	if want := []EventKind{EventJobNew, EventJobPublish, EventJobReturn}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("kinds %v want %v", kinds, want)
	}
	for _, f := range []string{"event_new", "event_publish", "event_ret_test_ping"} {
		if _, err := decodeEventFrame(readVector(t, "eventbus_3009/"+f+".frame.bin")); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

func serveRaw(t *testing.T, raw []byte) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ev")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := filepath.Join(dir, "bus.ipc")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write(raw)
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	return "unix://" + p
}

// TestClusterTagsUnwrapped: a cluster peer's event (Salt 3007+ cluster mode)
// is delivered under its inner tag, with the peer named; the tag filter sees
// the inner tag.
func TestClusterTagsUnwrapped(t *testing.T) {
	t.Parallel()
	const jid = "20261202001740189067"
	ev := classifyEvent("cluster/event/master-b/salt/job/"+jid+"/ret/m1", map[string]any{"return": true, "retcode": int64(0), "success": true})
	if ev.Tag != "salt/job/"+jid+"/ret/m1" || ev.Peer != "master-b" || ev.JobReturn == nil || ev.JobReturn.MinionID != "m1" {
		t.Fatalf("%+v", ev)
	}
	ev = classifyEvent("salt/job/"+jid+"/new", map[string]any{"__peer_id": "master-c", "fun": "test.ping"})
	if ev.Peer != "master-c" || ev.JobNew == nil {
		t.Fatalf("republished %+v", ev)
	}
	for _, tag := range []string{"cluster/event/", "cluster/event//salt/job/x", "cluster/event/peer", "cluster/event/peer/"} {
		if ev := classifyEvent(tag, map[string]any{}); ev.Tag != tag || ev.Peer != "" {
			t.Fatalf("%q: %+v", tag, ev)
		}
	}
	addr := serveRaw(t, append(eventFrame(t, "cluster/event/master-b/other/x", map[string]any{"a": 1}),
		eventFrame(t, "cluster/event/master-b/salt/job/"+jid+"/ret/m1", map[string]any{"return": true})...))
	s, err := SubscribeEvents(context.Background(), addr, WithTagPrefixes("salt/job/"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := next(t, s); got.JobReturn == nil || got.Peer != "master-b" {
		t.Fatalf("filtered %+v", got)
	}
}

// TestEventBusPermissionErrorNamesModeAndOwner: a unix socket refusing this
// process gives an EventBusPermissionError naming the socket's mode and owner
// and what to do. Root bypasses the mode, so the refusal comes from the
// dialer (EACCES from connect(2)) on a real socket made 0600.
func TestEventBusPermissionErrorNamesModeAndOwner(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "ev")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "bus.ipc")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		if os.Geteuid() != 0 {
			var d net.Dialer
			return d.DialContext(ctx, network, address) // refused by the kernel when not the owner
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.EACCES)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = SubscribeEvents(ctx, "unix://"+p, WithEventDialer(dial))
	if os.Geteuid() != 0 && err == nil {
		t.Skip("this process owns the socket")
	}
	var pe *EventBusPermissionError
	if !errors.Is(err, ErrEventBusPermission) || !errors.As(err, &pe) || !errors.Is(err, syscall.EACCES) {
		t.Fatalf("%v", err)
	}
	if pe.Mode.Perm() != 0o600 || pe.UID != os.Geteuid() || pe.Path != p {
		t.Fatalf("%+v", pe)
	}
	msg := err.Error()
	for _, want := range []string{"mode 0600", "owner ", p, "ipc_mode: tcp", "run the controller as the master's user"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("%q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Fatalf("multi-line: %q", msg)
	}
	// any other dial error stays as it was
	_, err = SubscribeEvents(ctx, "unix://"+filepath.Join(dir, "missing.ipc"))
	if err == nil || errors.Is(err, ErrEventBusPermission) {
		t.Fatalf("missing socket: %v", err)
	}
}
