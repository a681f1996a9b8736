package oduflow

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// wantOneLine fails unless err renders as one short line in slog's text and JSON handlers
// (slog.Any("err", err); the text handler formats with %+v, where cockroachdb prints its stack traces)
// and through %+v: no stack, no source path, no second line. The callers reach err over the real code
// paths, and check errors.Is/As on the same value, so the details stay reachable.
func wantOneLine(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error to render", what)
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Error("failed", slog.Any("err", err))
	slog.New(slog.NewJSONHandler(&js, nil)).Error("failed", slog.Any("err", err))
	for name, out := range map[string]string{"slog text": text.String(), "slog json": js.String(),
		"%+v": fmt.Sprintf("%+v", err) + "\n"} {
		if strings.Count(out, "\n") != 1 || strings.Contains(out, ".go:") || strings.Contains(out, "stack trace") ||
			strings.Contains(out, "goroutine") || len(out) > 1500 || !strings.Contains(out, strings.SplitN(err.Error(), ":", 2)[0]) {
			t.Fatalf("%s: %s renders %d lines, %d bytes:\n%s", what, name, strings.Count(out, "\n"), len(out), out)
		}
	}
}
