package salttest_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/oduflow/oduflow-go/salt/salttest"
)

// A simulator with one minion whose state.apply of roles.client_production fails, the eauth
// user of the lab, and length-prefixed event frames (3006.26+).
func ExampleStart() {
	sim, err := salttest.Start(context.Background(),
		salttest.WithEventFraming(salttest.FramingLengthPrefixed),
		salttest.WithEauthUser("file", "oduflow", "secret", salttest.LabACL()),
		salttest.WithMinimumAuthVersion(3),
	)
	if err != nil {
		panic(err)
	}
	defer func() { _ = sim.Close() }()
	sim.AddMinion("client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
		salttest.Standard(map[string]salttest.Outcome{"roles.client_production": salttest.Fails}))
	fmt.Println(strings.HasPrefix(sim.RequestAddr(), "tcp://127.0.0.1:"))
	fmt.Println(strings.HasSuffix(sim.EventAddr(), "/master_event_pub.ipc"))
	fmt.Println(sim.CountPublications(""))
	// Output:
	// true
	// true
	// 0
}
