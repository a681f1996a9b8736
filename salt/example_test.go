package salt_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// Publish test.ping with a preassigned JID and wait for the minion's return
// on the event bus, against the built-in master simulator. Against a real
// master use its ret_port ("tcp://127.0.0.1:4506"), its event socket
// ("unix:///var/run/salt/master/master_event_pub.ipc") and its key file.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ex")
	defer os.RemoveAll(dir)
	sim, err := salttest.Start(ctx, salttest.WithDir(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sim.Close()
	sim.AddMinion("web1", nil)

	// 1. subscribe first: the event bus has no replay
	events, err := salt.SubscribeEvents(ctx, sim.EventsAddr(), salt.WithTagPrefixes("salt/job/"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer events.Close()

	// 2. publish once, with a JID chosen (and persisted) beforehand
	client, _ := salt.NewClient(sim.Addr(), salt.WithAuth(salt.UserKey("root", sim.KeyFile())))
	defer client.Close()
	jid := salt.NewJIDGenerator().Next()
	res, err := client.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget("web1"), Fun: "test.ping", JID: jid})
	switch {
	case salt.IsOutcomeUnknown(err):
		fmt.Println("unknown: do not resend; look for", jid, "on the bus")
		return
	case err != nil:
		fmt.Println("not published:", err)
		return
	}
	fmt.Println("published to", res.Minions, "same jid:", res.JID == jid)

	// 3. wait for the return (after a Gap, poll the minion instead)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events.Events():
			if ev.JobReturn != nil && ev.JobReturn.JID == jid {
				fmt.Println(ev.JobReturn.MinionID, "returned", ev.JobReturn.Return)
				return
			}
		case <-timeout:
			fmt.Println("no return")
			return
		}
	}
	// Output:
	// published to [web1] same jid: true
	// web1 returned true
}

func ExampleJIDGenerator() {
	g := salt.NewJIDGenerator()
	a, b := g.Next(), g.Next() // strictly increasing, even within one microsecond
	_, err := salt.ParseJID(a.String())
	fmt.Println(len(a), a < b, err == nil)
	_, err = salt.ParseJID("2026-11-29")
	fmt.Println(errors.Is(err, salt.ErrInvalidJID))
	// Output:
	// 20 true true
	// true
}

func ExampleIsNotPublished() {
	err := errors.Wrap(&salt.MasterError{Name: "AuthorizationError", Message: "Authorization error occurred."}, "publish")
	fmt.Println(errors.Is(err, salt.ErrAuthorization), salt.IsNotPublished(err), salt.IsOutcomeUnknown(err))
	// Output: true true false
}

func TestDecodeValueTolerantKeys(t *testing.T) {
	t.Parallel()
	// {1: "pid one", "raw": <bytes that are not UTF-8>}
	v, err := salt.DecodeValue([]byte("\x82\x01\xa7pid one\xa3raw\xa2\xff\xfe"))
	m, _ := v.(map[string]any)
	if err != nil || m["1"] != "pid one" || m["raw"] != "\xff\xfe" {
		t.Fatalf("got %#v, %v", v, err)
	}
}

// Log in with eauth once, reuse the token until shortly before it expires,
// and bound what one reply may cost: a reply beyond the limits is refused
// before it is allocated, and its outcome is unknown.
func ExampleNewTokenSource() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ex")
	defer os.RemoveAll(dir)
	sim, err := salttest.Start(ctx, salttest.WithDir(dir),
		salttest.WithEauthUser("pam", "deploy", "s3cret", []salttest.ACLEntry{salttest.AllowOn("web*", "test.*")}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sim.Close()
	sim.AddMinion("web1", nil)

	login, _ := salt.NewClient(sim.Addr(), salt.WithConnectionReuse())
	defer login.Close()
	tokens := salt.NewTokenSource(login, "pam", "deploy", "s3cret", salt.WithRenewBefore(10*time.Minute))
	client, _ := salt.NewClient(sim.Addr(), salt.WithAuth(salt.TokenAuth(tokens)),
		salt.WithRequestTimeout(10*time.Second))
	defer client.Close()
	res, err := client.Publish(ctx, salt.PublishRequest{Target: salt.GlobTarget("web*"), Fun: "test.ping"})
	fmt.Println(err == nil, res != nil && res.Minions[0] == "web1", tokens.Current() != nil)

	tight, _ := salt.NewClient(sim.Addr(), salt.WithAuth(salt.TokenAuth(tokens)),
		salt.WithLimits(salt.Limits{MaxMessageBytes: 16}))
	defer tight.Close()
	_, err = tight.Publish(ctx, salt.PublishRequest{Target: salt.GlobTarget("web*"), Fun: "test.ping"})
	fmt.Println(errors.Is(err, salt.ErrLimitExceeded), salt.IsOutcomeUnknown(err))
	// Output:
	// true true true
	// true true
}
