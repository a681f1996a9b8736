package receipt

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Id errors name the form they want (never the value), and are one line however they are formatted.
func TestIDErrorsNameTheExpectedForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{ValidateSeedMinionID("web-1"), "invalid minion id (want client-<lowercase UUID>"},
		{ValidateSeedMinionID("client-0F8FAD5B-D9CB-469F-A165-70867728950E"), "want client-<lowercase UUID>"},
		{ValidateMinionID("web-1/.."), "invalid minion id (want 1-128 of [A-Za-z0-9._-]"},
		{ValidateRequestID("{0f8fad5b}"), "invalid request id (want a lowercase UUID"},
		{ValidateJID("123"), "invalid jid (want exactly 20 ASCII digits)"},
	} {
		if !errors.Is(tc.err, ErrInvalidID) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Fatalf("%v: want %q", tc.err, tc.want)
		}
		if s := fmt.Sprintf("%+v", tc.err); s != tc.err.Error() || strings.Contains(s, "\n") {
			t.Fatalf("%%+v is not the one-line message: %q", s)
		}
		if strings.Contains(tc.err.Error(), "web-1") || strings.Contains(tc.err.Error(), "{0f8fad5b}") {
			t.Fatalf("the value is echoed: %v", tc.err)
		}
	}
}
