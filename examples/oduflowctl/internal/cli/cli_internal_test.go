package cli

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/salt"
)

func TestParseInterleavesFlagsAndArguments(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	wait := fs.Bool("wait", false, "")
	n := fs.Int("n", 0, "")
	pos, err := parse(fs, []string{"a", "--wait", "b", "-n", "3", "c", "--", "--not-a-flag", "d"})
	if err != nil {
		t.Fatal(err)
	}
	if !*wait || *n != 3 || strings.Join(pos, " ") != "a b c --not-a-flag d" {
		t.Fatalf("wait %v n %d pos %q", *wait, *n, pos)
	}
}

func TestKeyUser(t *testing.T) {
	for in, want := range map[string]string{
		"/var/cache/salt/master/.root_key": "root", "/x/.salt_key": "salt", "/x/key": "root", "/x/._key": "root",
	} {
		if got := keyUser(in); got != want {
			t.Errorf("keyUser(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSanitizeEvent(t *testing.T) {
	if _, keep := sanitizeEvent(salt.Event{Tag: "salt/job/1/error", Data: map[string]any{"password": "p"}}, "", true); keep {
		t.Fatal("error tags are always dropped")
	}
	out, keep := sanitizeEvent(salt.Event{Tag: "salt/job/1/ret/m", Data: map[string]any{
		"fun": "oduflow_job.capabilities", "return": map[string]any{"protocol": int64(1)},
		"eauth": map[string]any{"Password": "p", "ok": "fine"}}}, "", false)
	if !keep {
		t.Fatal("dropped")
	}
	data := out["data"].(map[string]any)
	if data["return"].(map[string]any)["protocol"] != int64(1) {
		t.Fatalf("capabilities reduced: %v", data)
	}
	if e := data["eauth"].(map[string]any); e["Password"] != "<redacted>" || e["ok"] != "fine" {
		t.Fatalf("not redacted: %v", e)
	}
	gap, keep := sanitizeEvent(salt.Event{Gap: &salt.Gap{Reason: "reconnect", Dropped: 2}}, "x/", false)
	if !keep || gap["gap"].(map[string]any)["dropped"] != 2 {
		t.Fatalf("gap: %v", gap)
	}
	if _, keep := sanitizeEvent(salt.Event{Tag: "other"}, "salt/", false); keep {
		t.Fatal("prefix filter")
	}
}

func TestRunInProcess(t *testing.T) {
	var out, errb bytes.Buffer
	env := map[string]string{"ODUFLOW_OUTPUT": "json"}
	code := RunEnv(context.Background(), []string{"start", "configure", "nope"}, &out, &errb, func(k string) string { return env[k] })
	if code != ExitUsage || !strings.Contains(errb.String(), `invalid minion id "nope"`) || out.Len() != 0 {
		t.Fatalf("code %d out %q err %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := RunEnv(context.Background(), []string{"help"}, &out, &errb, func(string) string { return "" }); code != 0 ||
		!strings.Contains(out.String(), "Usage: oduflowctl") {
		t.Fatalf("help: %d %q", code, out.String())
	}
}
