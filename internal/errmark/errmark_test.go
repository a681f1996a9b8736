package errmark_test

import (
	"errors"
	"fmt"
	"testing"

	crdb "github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

var errSentinel = errors.New("sentinel")

type typed struct{ code string }

func (t *typed) Error() string { return "typed " + t.code }

func TestMarkVisibleToBothLibraries(t *testing.T) {
	cause := crdb.Wrapf(&typed{"x"}, "context %s", crdb.Safe("safe"))
	err := fmt.Errorf("outer: %w", errmark.Mark(cause, errSentinel))
	if !errors.Is(err, errSentinel) || !crdb.Is(err, errSentinel) {
		t.Fatal("sentinel not visible")
	}
	var tp *typed
	if !errors.As(err, &tp) || tp.code != "x" {
		t.Fatal("typed cause not visible to errors.As")
	}
	if got := errmark.Mark(nil, errSentinel); got != nil {
		t.Fatal("Mark(nil) must be nil")
	}
	if errors.Is(errmark.Mark(errors.New("a")), errSentinel) {
		t.Fatal("unmarked error matched")
	}
}

func TestMarkKeepsMessageAndRedaction(t *testing.T) {
	cause := crdb.Newf("token %s for %s", "s3cret", crdb.Safe("user"))
	err := errmark.Mark(cause, errSentinel)
	if err.Error() != cause.Error() {
		t.Fatalf("message changed: %q", err.Error())
	}
	red := string(redact.Sprint(err).Redact())
	if want := string(redact.Sprint(cause).Redact()); red != want {
		t.Fatalf("redacted %q, want %q", red, want)
	}
	if s := fmt.Sprintf("%+v", crdb.Wrap(err, "w")); len(s) == 0 {
		t.Fatal("empty verbose print")
	}
}
