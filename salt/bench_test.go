package salt_test

import (
	"context"
	"testing"

	"github.com/oduflow/oduflow-go/salt"
)

// BenchmarkPublishRoundTripSimulator: publish test.ping against the master
// simulator (request/reply only; the return is not awaited).
func BenchmarkPublishRoundTripSimulator(b *testing.B) {
	e := startSim(b)
	req := salt.PublishRequest{Target: salt.ListTarget(simMinion), Fun: "test.ping", JID: e.jids.Next()}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.key.Publish(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublishRoundTripLab publishes test.ping to a real master when the
// ODUFLOW_SALT_* variables are set, reusing ONE preassigned JID (the minion
// ignores a JID it has already seen, so the job runs once).
func BenchmarkPublishRoundTripLab(b *testing.B) {
	env := readLabEnv(b)
	c, err := salt.NewClient(env.master, salt.WithAuth(salt.UserKey("root", env.keyFile)))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := salt.PublishRequest{Target: salt.ListTarget(env.minion), Fun: "test.ping", JID: salt.NewJIDGenerator().Next()}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Publish(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
