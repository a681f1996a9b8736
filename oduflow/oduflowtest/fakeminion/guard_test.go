package fakeminion

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Each reason GuardFailureReasons models is one the module can write: its check is in the module's
// _GUARD_CHECKS and its text matches one of the module's _GuardFailure messages (a "{}" there stands
// for any text). A reason the module renamed or dropped fails here, so the model follows the module.
func TestGuardFailureReasonsFollowTheModule(t *testing.T) {
	src, err := os.ReadFile("../../../receipt/minion/oduflow_job.py")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	checks := map[string]bool{}
	for _, m := range regexp.MustCompile(`\("([a-z_]+)", _check_[a-z_]+\)`).FindAllStringSubmatch(s, -1) {
		checks[m[1]] = true
	}
	if len(checks) < 8 {
		t.Fatalf("found %d guard checks in the module: %v", len(checks), checks)
	}
	var templates []*regexp.Regexp
	for _, m := range regexp.MustCompile(`_GuardFailure\(\s*"([^"]+)"`).FindAllStringSubmatch(s, -1) {
		parts := strings.Split(m[1], "{}")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		templates = append(templates, regexp.MustCompile("^"+strings.Join(parts, ".+")+"$"))
	}
	covered := map[string]bool{}
	for _, reason := range GuardFailureReasons() {
		check, text, ok := strings.Cut(reason, ": ")
		if !ok || !checks[check] {
			t.Errorf("%q: check %q is not one of the module's %v", reason, check, checks)
			continue
		}
		covered[check] = true
		matched := false
		for _, re := range templates {
			if re.MatchString(text) {
				matched = true
				break
			}
		}
		if !matched {
			t.Errorf("%q: no _GuardFailure message of the module matches %q", reason, text)
		}
	}
	for c := range checks {
		if !covered[c] {
			t.Errorf("the module's check %q has no modelled failure", c)
		}
	}
}
