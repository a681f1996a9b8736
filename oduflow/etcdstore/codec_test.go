package etcdstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

func sampleClaim() *claims.Claim {
	d := time.Date(2026, 12, 1, 13, 0, 0, 123456000, time.UTC)
	return &claims.Claim{Protocol: 1, MinionID: "client-" + "0f0e0d0c-0b0a-4908-8706-050403020100",
		RequestID: "6f1c9a52-8d7e-4b1f-9a3c-2e5d7f8a9b0c", Profile: receipt.ProfileProduction, Role: "production",
		StateDigest: strings.Repeat("ab", 32), JID: "20261201130000123456", Phase: claims.PhaseTerminal,
		CreatedAt: d, DispatchedAt: &d, FinishedAt: &d, Status: receipt.StatusSucceeded, Passed: 60, Total: 60,
		Evidence: "receipt", Generation: 4}
}

func TestDecodeStrict(t *testing.T) {
	c := sampleClaim()
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a final protocol-1 claim encodes to %d bytes", len(data))
	got, err := decodeClaim(data, c.RequestID)
	if err != nil || got.Generation != 4 || !got.FinishedAt.Equal(*c.FinishedAt) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// Legacy spellings (claims migrated from a claim directory) are accepted.
	legacy := `{"minion_id":"` + c.MinionID + `","request_id":"` + c.RequestID + `","jid":"` + c.JID +
		`","state":"running","created":1764594000.5,"passed":0,"total":0,"generation":1}`
	if lc, err := decodeClaim([]byte(legacy), c.RequestID); err != nil || !lc.Legacy() ||
		lc.Phase != claims.PhaseDispatched {
		t.Fatalf("legacy: %+v %v", lc, err)
	}
	s := string(data)
	for name, bad := range map[string]string{
		"unknown":     strings.Replace(s, `"jid"`, `"jid2":1,"jid"`, 1),
		"duplicate":   strings.Replace(s, `"jid"`, `"total":0,"jid"`, 1),
		"trailing":    s + "{}",
		"trailing2":   s + "x",
		"not object":  `"x"`,
		"truncated":   s[:len(s)/2],
		"wrong type":  strings.Replace(s, `"passed":60`, `"passed":"60"`, 1),
		"other id":    strings.Replace(s, c.RequestID, "7f1c9a52-8d7e-4b1f-9a3c-2e5d7f8a9b0c", 1),
		"oversized":   strings.Replace(s, `"role":"production"`, `"role":"`+strings.Repeat("x", MaxClaimSize)+`"`, 1),
		"bad counts":  strings.Replace(s, `"passed":60`, `"passed":61`, 1),
		"empty":       "",
		"nested junk": strings.Replace(s, `"passed":60`, `"passed":[[[[[[[[[[]]]]]]]]]]`, 1),
	} {
		if _, err := decodeClaim([]byte(bad), c.RequestID); !errors.Is(err, claims.ErrCorruptClaim) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzDecodeClaim(f *testing.F) {
	data, _ := sampleClaim().MarshalBinary()
	f.Add(data)
	f.Add([]byte(`{"minion_id":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeClaim(b, sampleClaim().RequestID)
		if err != nil {
			if !errors.Is(err, claims.ErrCorruptClaim) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if c.Validate() != nil {
			t.Fatal("accepted an invalid claim")
		}
	})
}
