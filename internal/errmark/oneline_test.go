package errmark_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	crdb "github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// OneLine: cockroachdb's %+v stack is gone, a multi-line message is flattened and bounded, and every
// cause stays reachable for both libraries.
func TestOneLine(t *testing.T) {
	cause := &typed{"x"}
	err := errmark.OneLine(crdb.Wrap(errmark.Mark(cause, errSentinel), "context"))
	if !errors.Is(err, errSentinel) || !crdb.Is(err, errSentinel) {
		t.Fatal("sentinel lost")
	}
	var tp *typed
	if !errors.As(err, &tp) {
		t.Fatal("typed cause lost")
	}
	if errmark.OneLine(err) != err || errmark.OneLine(nil) != nil {
		t.Fatal("OneLine is not idempotent")
	}
	for _, s := range []string{fmt.Sprintf("%+v", err), fmt.Sprintf("%v", err), fmt.Sprintf("%s", err)} {
		if s != "context: typed x" {
			t.Fatalf("got %q", s)
		}
	}
	if s := fmt.Sprintf("%q", err); s != `"context: typed x"` {
		t.Fatalf("%%q: %s", s)
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("m", slog.Any("err", err))
	slog.New(slog.NewJSONHandler(&js, nil)).Info("m", slog.Any("err", err))
	if !strings.Contains(text.String(), `err="context: typed x"`) || !strings.Contains(js.String(), `"err":"context: typed x"`) {
		t.Fatalf("slog: %s %s", text.String(), js.String())
	}

	long := errmark.OneLine(errors.New("first line\nsecond line\r\n" + strings.Repeat("é", 2000)))
	if s := long.Error(); strings.ContainsAny(s, "\r\n") || len(s) > 1030 || !strings.HasPrefix(s, "first line second line") ||
		!strings.HasSuffix(s, "…") {
		t.Fatalf("flattened: %q (%d bytes)", s[:40], len(s))
	}
	var redacted bytes.Buffer
	redacted.WriteString(crdb.Redact(errmark.OneLine(crdb.Newf("safe %s", crdb.Safe("word")))))
	if !strings.Contains(redacted.String(), "safe word") {
		t.Fatalf("redaction lost the safe part: %s", redacted.String())
	}
}
