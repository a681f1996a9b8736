package salt

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkPublishRoundTripZmq4Router: one publish (fresh connection, ZMTP
// handshake, request, reply) against an in-test zmq4 ROUTER master.
func BenchmarkPublishRoundTripZmq4Router(b *testing.B) {
	addr := startZmqRouter(b, func(env map[string]any) any {
		load := env["load"].(map[string]any)
		return map[string]any{"enc": "clear", "load": map[string]any{"jid": load["jid"], "minions": load["tgt"], "missing": []any{}}}
	})
	c, _ := NewClient(addr, WithAuth(UserKey("root", writeKey(b, testUserKey("K")))))
	defer c.Close()
	req := PublishRequest{Target: ListTarget(testMinion), Fun: "test.ping", JID: "20261129154606042846"}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Publish(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeReturnEvents decodes the captured salt/job/<jid>/ret frames
// (frame map, tag split, data, typed JobReturn).
func BenchmarkDecodeReturnEvents(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(vectorDir, "eventbus", "event_ret_*.frame.bin"))
	var frames [][]byte
	total := 0
	for _, f := range files {
		fr := readVector(b, "eventbus/"+filepath.Base(f))
		frames = append(frames, fr)
		total += len(fr)
	}
	b.SetBytes(int64(total / len(frames)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		ev, err := decodeEventFrame(frames[i%len(frames)])
		if err != nil || ev.Kind() != EventJobReturn {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkEncodePublish encodes a state.apply publish envelope.
func BenchmarkEncodePublish(b *testing.B) {
	c, _ := NewClient("tcp://127.0.0.1:1")
	am := authMaterial{kind: authKey, user: "root", key: "pyVdoNZfjUCc7FOMkV2EzSrPJEXlLxg721CxXWR3Wzg9/W/2a8C8cEaXVERMFSdZd5RIDRjOvt4="}
	req := PublishRequest{Target: ListTarget(testMinion), Fun: "state.apply", Args: []any{"roles.client_stack"},
		Kwargs: map[string]any{"test": true}, JID: "20261129154606042846", Metadata: map[string]any{"request_id": "x"}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		load, _ := publishLoad(req, am, "root")
		if _, err := c.envelope(load); err != nil {
			b.Fatal(err)
		}
	}
}
