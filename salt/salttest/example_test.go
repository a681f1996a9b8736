package salttest_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// A fake master on real sockets with one generic minion: publish test.ping with salt.Client
// and read the minion's return from the event bus, then check that exactly one publication
// went out for that JID.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir, _ := os.MkdirTemp("", "st") // short: the event socket path is limited to 107 bytes
	defer func() { _ = os.RemoveAll(dir) }()
	m, err := salttest.Start(ctx, salttest.WithDir(dir),
		salttest.WithRole("roles.client_production", salttest.Fails))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = m.Close() }()
	m.AddMinion("web1", nil) // generic: test.ping, state runs of the configured roles, ...

	events, err := salt.SubscribeEvents(ctx, m.EventsAddr(), salt.WithTagPrefixes("salt/job/"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = events.Close() }()
	client, err := salt.NewClient(m.Addr(), salt.WithAuth(salt.UserKey("root", m.KeyFile())))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = client.Close() }()

	jid := salt.NewJIDGenerator().Next()
	res, err := client.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget("web1"), Fun: "test.ping", JID: jid})
	if err != nil {
		fmt.Println("publish:", err)
		return
	}
	fmt.Println("published to", res.Minions)
	for {
		select {
		case ev := <-events.Events():
			if ev.JobReturn != nil && ev.JobReturn.JID == jid {
				fmt.Println(ev.JobReturn.MinionID, "returned", ev.JobReturn.Return)
				fmt.Println("publications of this JID:", m.PublicationCount("test.ping", string(jid)))
				return
			}
		case <-ctx.Done():
			fmt.Println("no return")
			return
		}
	}
	// Output:
	// published to [web1]
	// web1 returned true
	// publications of this JID: 1
}
