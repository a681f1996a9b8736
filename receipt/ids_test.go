package receipt

import (
	"regexp"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

func TestValidateIDs(t *testing.T) {
	t.Parallel()
	const u = "5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	good := map[string]func(string) error{
		"client-" + u:                          ValidateMinionID,
		"client-" + u + "-":                    ValidateMinionID, // any id of the policy, not only the seeds'
		"web01":                                ValidateMinionID,
		"web01.lab.example":                    ValidateMinionID,
		"WEB_01-a.b":                           ValidateMinionID,
		"9":                                    ValidateMinionID,
		strings.Repeat("a", 128):               ValidateMinionID,
		"web01.locked":                         ValidateMinionID,
		u:                                      ValidateRequestID,
		"00000000-0000-0000-0000-000000000000": ValidateRequestID,
		"20261129154606051411":                 ValidateJID,
		"00000000000000000000":                 ValidateJID,
	}
	for s, f := range good {
		if err := f(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	bad := []struct {
		s    string
		f    func(string) error
		want error
	}{
		{"", ValidateSeedMinionID, ErrInvalidID},
		{u, ValidateSeedMinionID, ErrInvalidID},
		{"Client-" + u, ValidateSeedMinionID, ErrInvalidID},
		{"client-5B2F8C1E-3C4D-4E5F-8A9B-0C1D2E3F4A5B", ValidateSeedMinionID, ErrInvalidID},
		{"client-" + u + "\n", ValidateSeedMinionID, ErrInvalidID},
		{"client-" + u[:35] + "g", ValidateSeedMinionID, ErrInvalidID},
		{"client--" + u[1:], ValidateSeedMinionID, ErrInvalidID},
		{"web01.lab.example", ValidateSeedMinionID, ErrInvalidID},
		{"", ValidateMinionID, ErrInvalidID},
		{"client-" + u + "\n", ValidateMinionID, ErrInvalidID},
		{"web01..example", ValidateMinionID, ErrInvalidID},
		{".web01", ValidateMinionID, ErrInvalidID},
		{"-web01", ValidateMinionID, ErrInvalidID},
		{"_web01", ValidateMinionID, ErrInvalidID},
		{"web01/etc", ValidateMinionID, ErrInvalidID},
		{"web*", ValidateMinionID, ErrInvalidID},
		{"web?", ValidateMinionID, ErrInvalidID},
		{"web[0-9]", ValidateMinionID, ErrInvalidID},
		{"web01,web02", ValidateMinionID, ErrInvalidID},
		{"web 01", ValidateMinionID, ErrInvalidID},
		{"web01\x00", ValidateMinionID, ErrInvalidID},
		{"E@web.*", ValidateMinionID, ErrInvalidID},
		{"wéb01", ValidateMinionID, ErrInvalidID},
		{strings.Repeat("a", 129), ValidateMinionID, ErrInvalidID},
		{"web01.lock", ValidateMinionID, ErrInvalidID},
		{"", ValidateRequestID, ErrInvalidID},
		{"5b2f8c1e3c4d4e5f8a9b0c1d2e3f4a5b", ValidateRequestID, ErrInvalidID},
		{"{" + u + "}", ValidateRequestID, ErrInvalidID},
		{"5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5", ValidateRequestID, ErrInvalidID},
		{"5b2f8c1e_3c4d-4e5f-8a9b-0c1d2e3f4a5b", ValidateRequestID, ErrInvalidID},
		{"", ValidateJID, ErrInvalidID},
		{"2026112915460605141", ValidateJID, ErrInvalidID},
		{"202611291546060514111", ValidateJID, ErrInvalidID},
		{"2026112915460605141a", ValidateJID, ErrInvalidID},
		{"２０２６１１２９１５４６０６０５１４", ValidateJID, ErrInvalidID},
		{"-2026112915460605141", ValidateJID, ErrInvalidID},
	}
	for _, c := range bad {
		if err := c.f(c.s); !errors.Is(err, c.want) {
			t.Errorf("%q: err = %v, want %v", c.s, err, c.want)
		}
	}
}

func TestNewRequestID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		id := NewRequestID()
		if err := ValidateRequestID(id); err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		if id[14] != '4' {
			t.Fatalf("%q is not version 4", id)
		}
		if seen[id] {
			t.Fatalf("duplicate %q", id)
		}
		seen[id] = true
	}
}

func TestProfilesAndStatuses(t *testing.T) {
	t.Parallel()
	for _, p := range allProfiles() {
		got, err := ParseProfile(string(p))
		if err != nil || got != p {
			t.Errorf("ParseProfile(%q) = %q, %v", p, got, err)
		}
		if p.Fixed() == (p == ProfileCustom) {
			t.Errorf("%q: Fixed() = %v", p, p.Fixed())
		}
	}
	for _, s := range []string{"", "Configure", "highstate", "custom "} {
		if _, err := ParseProfile(s); !errors.Is(err, ErrUnknownProfile) {
			t.Errorf("ParseProfile(%q): %v", s, err)
		}
	}
	terminal := map[Status]bool{StatusSucceeded: true, StatusFailed: true, StatusUnknown: false, StatusRunning: false, StatusNotStarted: false}
	for s, want := range terminal {
		if s.Terminal() != want || !s.Valid() {
			t.Errorf("%q: Terminal() = %v, Valid() = %v", s, s.Terminal(), s.Valid())
		}
	}
	if Status("done").Valid() {
		t.Error("Status(done) valid")
	}
}

// idPolicyOracle is the id policy written as a regular expression plus the ".." rule, independently of
// isPolicyMinionID's loop.
var idPolicyOracle = regexp.MustCompile(`\A[A-Za-z0-9][A-Za-z0-9._-]{0,127}\z`)

// FuzzValidateMinionID: the policy accepts exactly what the oracle accepts; every seeds' id is a policy
// id; a refusal is ErrInvalidID and never echoes the value.
func FuzzValidateMinionID(f *testing.F) {
	for _, s := range []string{"web01.lab.example", "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b", "a..b", "-x", "web*",
		"a,b", "a/b", "", "x\x00", "wéb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidateMinionID(s)
		want := idPolicyOracle.MatchString(s) && !strings.Contains(s, "..") && !strings.HasSuffix(s, ".lock")
		if (err == nil) != want {
			t.Fatalf("%q: err %v, oracle %v", s, err, want)
		}
		if err != nil && (!errors.Is(err, ErrInvalidID) || (len(s) > 3 && strings.Contains(err.Error(), s))) {
			t.Fatalf("%q: %v", s, err)
		}
		if ValidateSeedMinionID(s) == nil && err != nil {
			t.Fatalf("%q: a seeds' id outside the policy", s)
		}
	})
}
