package saltcmd_test

import (
	"os"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
)

// TestIntegrationRunAgainstRealMaster runs test.ping and a failing cmd.run on a real master
// (the lab: eval "$(bash saltlab.sh env)"), reading the second master's bus too when the lab
// runs in multi mode: the minion returns once, an id without a key is named not connected.
func TestIntegrationRunAgainstRealMaster(t *testing.T) {
	master, events, key, minion := os.Getenv("ODUFLOW_SALT_MASTER"), os.Getenv("ODUFLOW_SALT_EVENTS"),
		os.Getenv("ODUFLOW_SALT_KEY_FILE"), os.Getenv("ODUFLOW_SALT_MINION")
	if master == "" || events == "" || key == "" || minion == "" {
		t.Skip("no Salt lab: set ODUFLOW_SALT_MASTER, ODUFLOW_SALT_EVENTS, ODUFLOW_SALT_KEY_FILE, ODUFLOW_SALT_MINION")
	}
	if _, err := os.Stat(key); err != nil {
		t.Skipf("the master's key file is not readable here: %v", err)
	}
	pub, err := salt.NewClient(master, salt.WithAuth(salt.UserKey("root", key)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	var opts []saltcmd.Option
	if b := os.Getenv("ODUFLOW_SALT_EVENTS_B"); b != "" {
		opts = append(opts, saltcmd.WithEventBus(b))
	}
	c, err := saltcmd.New(pub, events, opts...)
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.Run(ctxFor(t, time.Minute), saltcmd.Cmd{Target: salt.ListTarget(minion, "no-such-minion-saltcmd"),
		Fun: "test.ping"})
	if err != nil {
		t.Fatal(err)
	}
	got, _, sum := collect(t, job)
	if b, ok := got[minion].Bool(); !ok || !b || got["no-such-minion-saltcmd"].State != saltcmd.NotConnected {
		t.Fatalf("got %+v", got)
	}
	if sum.Returned != 1 || len(sum.NotReturned) != 1 {
		t.Errorf("summary %+v", sum)
	}
	job, err = c.Run(ctxFor(t, time.Minute), saltcmd.Cmd{Target: salt.ListTarget(minion), Fun: "cmd.run",
		Args: []any{"echo out; exit 3"}, Kwargs: map[string]any{"python_shell": true}})
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ = collect(t, job)
	if txt, ok := got[minion].Text(); !ok || txt != "out" || got[minion].Retcode != 3 || got[minion].Success {
		t.Fatalf("cmd.run: %+v", got[minion])
	}
}
