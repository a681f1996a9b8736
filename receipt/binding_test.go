package receipt

import (
	"testing"

	"github.com/cockroachdb/errors"
)

func TestBindingCheck(t *testing.T) {
	t.Parallel()
	r := goodReceipt()
	b := r.Binding()
	if err := b.Check(r); err != nil {
		t.Fatal(err)
	}
	other := "client-00000000-0000-4000-8000-000000000000"
	cases := []struct {
		field string
		f     func(*Binding)
	}{
		{"minion_id", func(b *Binding) { b.MinionID = other }},
		{"request_id", func(b *Binding) { b.RequestID = NewRequestID() }},
		{"jid", func(b *Binding) { b.JID = "20261129154606051412" }},
		{"profile", func(b *Binding) { b.Profile = ProfileProduction }},
		{"state_digest", func(b *Binding) { b.StateDigest = testDigest }},
	}
	for _, c := range cases {
		bb := b
		c.f(&bb)
		err := bb.Check(r)
		var be *InvalidReceiptError
		if !errors.Is(err, ErrInvalidReceipt) || !errors.As(err, &be) || be.Reason != reasonBinding || be.Field != c.field {
			t.Errorf("%s: err = %v", c.field, err)
		}
	}
	// Custom: digests must match exactly.
	rc := r
	rc.Profile, rc.StateDigest, rc.Passed, rc.Total = ProfileCustom, testDigest, 1, 1
	bc := rc.Binding()
	if err := bc.Check(rc); err != nil {
		t.Fatal(err)
	}
	bc.StateDigest = "0" + testDigest[1:]
	var be *InvalidReceiptError
	if err := bc.Check(rc); !errors.As(err, &be) || be.Reason != reasonBinding || be.Field != "state_digest" {
		t.Fatalf("digest mismatch: %v", err)
	}
	// An evidence-free custom answer (no digest known) matches any digest.
	for _, st := range []Status{StatusNotStarted, StatusUnknown} {
		ans := rc
		ans.Status, ans.StateDigest, ans.Passed, ans.Total = st, "", 0, 0
		if err := bc.Check(ans); err != nil {
			t.Errorf("%s answer: %v", st, err)
		}
	}
	// So does a fenced receipt committed by fence() (nothing ran, no payload known), but a
	// failed receipt without the code does not, and a fenced one that names a digest must match.
	fenced := rc
	fenced.Status, fenced.StateDigest, fenced.Passed, fenced.Total, fenced.Code = StatusFailed, "", 0, 0, CodeFenced
	if err := bc.Check(fenced); err != nil {
		t.Errorf("fenced answer: %v", err)
	}
	fenced.StateDigest = testDigest
	if err := bc.Check(fenced); !errors.As(err, &be) || be.Field != "state_digest" {
		t.Errorf("fenced answer with another digest: %v", err)
	}
	failed := rc
	failed.Status, failed.StateDigest, failed.Passed, failed.Total = StatusFailed, "", 0, 1
	if err := bc.Check(failed); !errors.As(err, &be) || be.Reason != reasonBadDigest {
		t.Errorf("failed custom answer without digest: %v", err)
	}
	// An invalid receipt is rejected as invalid, not as a mismatch.
	bad := r
	bad.Passed = 61
	var ie *InvalidReceiptError
	if err := b.Check(bad); !errors.As(err, &ie) || ie.Reason != reasonCounts {
		t.Fatalf("invalid receipt: %v", err)
	}
}
