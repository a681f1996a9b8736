package profiles

import (
	"errors"
	"testing"

	"github.com/oduflow/oduflow-go/receipt"
)

func TestRoleFor(t *testing.T) {
	want := map[receipt.Profile]Role{
		receipt.ProfileConfigure:    "roles.client_stack",
		receipt.ProfileProduction:   "roles.client_production",
		receipt.ProfileVolumeResize: "roles.client_storage_resize",
		receipt.ProfileCredentials:  "roles.client_credentials",
	}
	for p, r := range want {
		got, err := RoleFor(p)
		if err != nil || got != r {
			t.Errorf("RoleFor(%s) = %q, %v; want %q", p, got, err, r)
		}
	}
	if r, err := RoleFor(receipt.ProfileCustom); !errors.Is(err, ErrCustomHasNoRole) || r != "" {
		t.Errorf("custom: %q, %v", r, err)
	}
	for _, p := range []receipt.Profile{"", "Configure", "configure ", "roles.client_stack", "custom\x00", "highstate"} {
		if r, err := RoleFor(p); !errors.Is(err, receipt.ErrUnknownProfile) || r != "" {
			t.Errorf("RoleFor(%q) = %q, %v; want ErrUnknownProfile", p, r, err)
		}
	}
	fixed := Fixed()
	if len(fixed) != len(want) {
		t.Fatalf("Fixed() has %d entries, want %d", len(fixed), len(want))
	}
	for p, r := range want {
		if fixed[p] != r {
			t.Errorf("Fixed()[%s] = %q, want %q", p, fixed[p], r)
		}
	}
	if _, ok := fixed[receipt.ProfileCustom]; ok {
		t.Error("Fixed() must not contain custom")
	}
}

func TestFixedIsACopy(t *testing.T) {
	m := Fixed()
	m[receipt.ProfileConfigure] = "evil.role"
	m[receipt.ProfileCustom] = "evil.custom"
	if r, _ := RoleFor(receipt.ProfileConfigure); r != roleClientStack {
		t.Fatalf("modifying Fixed() changed RoleFor: %q", r)
	}
	if Fixed()[receipt.ProfileConfigure] != roleClientStack || len(Fixed()) != 4 {
		t.Fatal("modifying Fixed() changed the table")
	}
}

func TestEveryProfileIsCovered(t *testing.T) {
	for _, p := range receipt.Profiles() {
		_, err := RoleFor(p)
		if p == receipt.ProfileCustom {
			if !errors.Is(err, ErrCustomHasNoRole) {
				t.Errorf("custom: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
