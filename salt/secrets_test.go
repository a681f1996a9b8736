package salt

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

// TestNoSecretsInLogsOrErrors runs every authenticated command with a debug
// logger and checks that no password, key or token appears in the logs or in
// any error text (plain, %+v, or redacted).
func TestNoSecretsInLogsOrErrors(t *testing.T) {
	t.Parallel()
	const pw = "PW-SECRET-0123456789"
	key := testUserKey("KEY-SECRET-0123456789")
	addr, _ := fakeMaster(t, key)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	var errs []error
	for _, a := range []Auth{UserKey("root", writeKey(t, key)), UserKey("root", writeKey(t, testUserKey("KEY-SECRET-wrong"))),
		Eauth("file", "u", pw), TokenAuth(staticToken("TOKEN-SECRET-0123456789"))} {
		c, _ := NewClient(addr, WithAuth(a), WithLogger(logger))
		_, err := c.Publish(ctx, PublishRequest{Target: ListTarget("m"), Fun: "test.ping"})
		errs = append(errs, err)
		_, err = c.Publish(ctx, PublishRequest{Target: ListTarget("m"), Fun: "cmd.run"})
		errs = append(errs, err)
		_, err = c.Runner(ctx, "test.arg", nil, nil)
		errs = append(errs, err)
		_, err = c.Wheel(ctx, "key.list_all", nil)
		errs = append(errs, err)
		_, err = c.MkToken(ctx, "file", "u", pw)
		errs = append(errs, err)
		_ = c.Close()
	}
	// transport failures with credentials in the request
	dead, _ := NewClient("tcp://127.0.0.1:1", WithAuth(Eauth("file", "u", pw)), WithLogger(logger))
	_, err := dead.Publish(ctx, PublishRequest{Target: ListTarget("m"), Fun: "test.ping"})
	errs = append(errs, err)
	var text strings.Builder
	text.Write(logs.Bytes())
	for _, e := range errs {
		if e != nil {
			fmt.Fprintf(&text, "%v\n%+v\n%s\n", e, e, errors.Redact(e))
		}
	}
	for _, secret := range []string{"KEY-SECRET", "PW-SECRET", "TOKEN-SECRET"} {
		if strings.Contains(text.String(), secret) {
			t.Fatalf("%s leaked:\n%s", secret, text.String())
		}
	}
	if !strings.Contains(logs.String(), "salt publish") {
		t.Fatalf("expected publish logs, got:\n%s", logs.String())
	}
}

// TestDefaultEnvelopeVersion3: the default envelope differs from the 3006.0
// capture only in its version byte.
func TestDefaultEnvelopeVersion3(t *testing.T) {
	t.Parallel()
	c, _ := NewClient("tcp://127.0.0.1:1")
	name := "01_publish_rootkey_list_test_ping"
	got, err := c.envelope(goldenRequest(t, name))
	if err != nil {
		t.Fatal(err)
	}
	want := readVector(t, "clear/"+name+".request.bin")
	if !bytes.Equal(got[:len(got)-1], want[:len(want)-1]) || got[len(got)-1] != 3 || want[len(want)-1] != 2 {
		t.Fatalf("version byte: got %x want %x", got[len(got)-1], want[len(want)-1])
	}
}
