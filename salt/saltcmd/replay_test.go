package saltcmd_test

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/oduflow/oduflow-go/salt/salttest"
)

// replayBus is an event bus that, for every reader, waits for the master's next publication
// and writes one return per minion for its JID, in the simulator's frame format
// ({head: {}, body: bin(tag "\n\n" msgpack(data))}), encoded before the run.
type replayBus struct {
	addr string
}

const placeholderJID = "19700101000000000000"

func startReplayBus(tb testing.TB, m *salttest.Master, ids []string) *replayBus {
	tb.Helper()
	var frames bytes.Buffer
	for _, id := range ids {
		data := map[string]any{"cmd": "_return", "id": id, "success": true, "return": true, "retcode": 0,
			"jid": placeholderJID, "fun": "test.ping", "fun_args": []any{}, "user": "root",
			"_stamp": "2026-12-01T00:00:00.000000"}
		packed, err := msgpack.Marshal(data)
		if err != nil {
			tb.Fatal(err)
		}
		body := append([]byte("salt/job/"+placeholderJID+"/ret/"+id+"\n\n"), packed...)
		f, err := msgpack.Marshal(map[string]any{"head": map[string]any{}, "body": body})
		if err != nil {
			tb.Fatal(err)
		}
		frames.Write(f)
	}
	path := filepath.Join(tb.TempDir(), "bus.ipc")
	if len(path) > 100 {
		path = filepath.Join("/tmp", filepath.Base(tb.TempDir())+".ipc")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		// Each run connects once and publishes once: the n-th connection replays the n-th
		// publication, however late it is accepted.
		for served := len(m.Publications()); ; served++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			seen := served
			go func() {
				defer func() { _ = conn.Close() }()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if m.WaitUntil(ctx, func() bool { return len(m.Publications()) > seen }) != nil {
					return
				}
				jid := m.Publications()[seen].JID
				out := bytes.ReplaceAll(frames.Bytes(), []byte(placeholderJID), []byte(jid))
				if _, err := conn.Write(out); err != nil {
					return
				}
				_, _ = conn.Read(make([]byte, 1)) // until the reader hangs up
			}()
		}
	}()
	return &replayBus{addr: "unix://" + path}
}
