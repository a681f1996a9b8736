package cli

import (
	stderrors "errors"
	"slices"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
)

// A claim write to etcd whose outcome is unknown is exit status 5 even though it also failed to reach the
// claim store (which alone would be 3, "nothing written").
func TestEtcdOutcomeUnknownIsExit5(t *testing.T) {
	lost := errmark.Mark(stderrors.New("etcdstore: create claim: context deadline exceeded"),
		etcdstore.ErrOutcomeUnknown, claims.ErrClaimStore)
	if got := exitFor(lost); got != ExitUnknown {
		t.Fatalf("outcome-unknown write: exit %d, want %d", got, ExitUnknown)
	}
	read := errmark.Mark(stderrors.New("etcdstore: read claim: unavailable"), claims.ErrClaimStore)
	if got := exitFor(read); got != ExitUnreachable {
		t.Fatalf("failed read: exit %d, want %d", got, ExitUnreachable)
	}
}

func TestEtcdSettings(t *testing.T) {
	env := map[string]string{"ODUFLOW_CLAIMS": "etcds://10.0.0.1:2379,10.0.0.2:2379/oduflow/prod",
		"ODUFLOW_ETCD_USER": "ops:pw:with:colons", "ODUFLOW_ETCD_CACERT": "/ca.pem"}
	g := globalsFromEnv(func(k string) string { return env[k] })
	if !g.etcdClaims() {
		t.Fatal("etcds:// not recognised")
	}
	if _, err := g.etcdOptions(); err != nil {
		t.Fatal(err)
	}
	// The detached worker gets the URL, the credentials and the TLS files through its environment.
	child := g.childEnv()
	for _, kv := range []string{"ODUFLOW_CLAIMS=etcds://10.0.0.1:2379,10.0.0.2:2379/oduflow/prod",
		"ODUFLOW_ETCD_USER=ops:pw:with:colons", "ODUFLOW_ETCD_CACERT=/ca.pem"} {
		if !slices.Contains(child, kv) {
			t.Errorf("worker environment lacks %q", kv)
		}
	}
	for _, tc := range []struct {
		claims, user, password, cert, key, ca, want string
	}{
		{"etcd://h:1/p", "", "pw", "", "", "", "needs ODUFLOW_ETCD_USER"},
		{"etcd://h:1/p", "", "", "", "", "/ca.pem", "need --claims etcds://"},
		{"etcds://h:1/p", "", "", "/c.pem", "", "", "go together"},
		{"etcd://u:pw@h:1/p", "", "", "", "", "", "credentials in the URL"},
		{"etcd://h:99999/p", "", "", "", "", "", "port"},
	} {
		g := &globals{claims: tc.claims, etcd: etcdSettings{user: tc.user, password: tc.password, cert: tc.cert,
			key: tc.key, caCert: tc.ca}}
		_, err := g.etcdOptions()
		if err == nil || exitFor(err) != ExitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v (exit %d), want exit 2 with %q", tc, err, exitFor(err), tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("%+v: the error echoes a password: %v", tc, err)
		}
	}
}
