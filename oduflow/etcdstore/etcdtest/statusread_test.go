package etcdtest

import (
	"context"
	"errors"
	"testing"

	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// TestGetWithRequestLock: the one-read Status path reads the claim and the request lock's state as Get
// and RequestLockHeld do, from another replica's Store too.
func TestGetWithRequestLock(t *testing.T) {
	ctx := context.Background()
	st := newStores(t, 2)
	a, b := st[0], st[1]
	c := newClaim(newMinion())
	if _, _, err := b.GetWithRequestLock(ctx, c.RequestID); !errors.Is(err, claims.ErrNoClaim) {
		t.Fatalf("no claim yet: %v", err)
	}
	if err := a.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	check := func(want bool) {
		t.Helper()
		got, held, err := b.GetWithRequestLock(ctx, c.RequestID)
		if err != nil || got.RequestID != c.RequestID || got.Generation != 1 {
			t.Fatalf("GetWithRequestLock: %+v %v", got, err)
		}
		if lh, err := b.RequestLockHeld(ctx, c.RequestID); err != nil || held != want || lh != want {
			t.Fatalf("held %v, RequestLockHeld %v (%v), want %v", held, lh, err, want)
		}
	}
	check(false)
	l, err := a.TryRequestLock(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	check(true)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	check(false)
	if _, _, err := b.GetWithRequestLock(ctx, "not-a-request-id"); !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("bad id: %v", err)
	}
}
