package oduflowtest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// malformedRecords are stored verbatim as a request's record; each must read as ErrCorruptClaim.
func malformedRecords(requestID string) map[string][]byte {
	valid := func(edit string) []byte {
		c := NewClaim()
		c.RequestID = requestID
		data, _ := c.MarshalBinary()
		return []byte(strings.Replace(string(data), `"phase":"claimed"`, edit, 1))
	}
	return map[string][]byte{
		"empty":                {},
		"truncated json":       []byte(`{"minion_id":"client-`),
		"not json":             []byte("claim\x00\xff\xfe"),
		"json null":            []byte("null"),
		"json array":           []byte(`[1,2]`),
		"wrong field types":    []byte(`{"minion_id":7,"request_id":["x"],"generation":"one"}`),
		"unknown phase":        valid(`"phase":"exploded"`),
		"final without status": valid(`"phase":"terminal"`),
		"passed over total":    valid(`"phase":"claimed","passed":5,"total":1`),
		"negative count":       valid(`"phase":"claimed","passed":-1`),
		"bad jid":              bytes.Replace(valid(`"phase":"claimed"`), []byte(`"jid":"2`), []byte(`"jid":"x`), 1),
		"bad minion id":        valid(`"phase":"claimed","minion_id":"../../etc"`),
		"oversized":            bytes.Repeat([]byte("x"), 2<<20),
	}
}

func (s *suite) testCorrupt(t *testing.T) {
	if s.f.Corrupt == nil {
		t.Skip("the factory cannot inject raw records (no Corrupt)")
	}
	t.Run("malformed records", func(t *testing.T) {
		loc := s.backend(t)
		st := s.open(t, loc)
		for name, data := range malformedRecords(receipt.NewRequestID()) {
			t.Run(name, func(t *testing.T) {
				req := receipt.NewRequestID()
				if err := s.f.Corrupt(testContext(t), loc, req, data); err != nil {
					t.Fatal(err)
				}
				s.wantCorrupt(t, st, req)
			})
		}
	})
	t.Run("foreign record", func(t *testing.T) {
		loc := s.backend(t)
		st := s.open(t, loc)
		req := receipt.NewRequestID()
		foreign := NewClaim() // a valid claim of another request, stored under req
		foreign.Generation = 1
		data, err := foreign.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.f.Corrupt(testContext(t), loc, req, data); err != nil {
			t.Fatal(err)
		}
		s.wantCorrupt(t, st, req)
	})
	t.Run("listed corrupt claim", func(t *testing.T) {
		loc := s.backend(t)
		st := s.open(t, loc)
		c := mustCreate(t, st, NewClaim())
		if err := s.f.Corrupt(testContext(t), loc, c.RequestID, []byte("{")); err != nil {
			t.Fatal(err)
		}
		// Hiding the claim would hide a possibly dispatched request from the quarantine check.
		list, err := st.ListByClient(testContext(t), c.MinionID)
		wantErr(t, "ListByClient of a client with a corrupt claim", err, claims.ErrCorruptClaim)
		if len(list) != 0 {
			t.Fatalf("ListByClient returned %d claims with its error", len(list))
		}
	})
}

// wantCorrupt checks every operation on a corrupt record: typed errors, no panic, nothing overwritten.
func (s *suite) wantCorrupt(t *testing.T, st Store, req string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic on a corrupt record: %v", r)
		}
	}()
	c, err := st.Get(testContext(t), req)
	wantErr(t, "Get of a corrupt record", err, claims.ErrCorruptClaim)
	if c != nil {
		t.Fatalf("Get returned %+v with its error", c)
	}
	next := NewClaim()
	next.RequestID, next.Generation = req, 1
	_, err = st.CompareAndSwap(testContext(t), next)
	wantErr(t, "CompareAndSwap over a corrupt record", err, claims.ErrCorruptClaim)
	_, err = st.CompareAndSwapHeld(testContext(t), next)
	wantErr(t, "CompareAndSwapHeld over a corrupt record", err, claims.ErrCorruptClaim)
	wantErr(t, "Create over a corrupt record", st.Create(testContext(t), next), claims.ErrClaimExists)
	_, err = st.Get(testContext(t), req)
	wantErr(t, "Get after the refused writes", err, claims.ErrCorruptClaim)
}
