package receipt

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/errors"
)

// TestTransitionTable has one row per line of the table in doc.go, and then
// checks that every other pair is illegal.
func TestTransitionTable(t *testing.T) {
	t.Parallel()
	type row struct {
		from, to phase
		trust    bool
		legal    bool
	}
	any2 := func(from, to phase, legal bool) []row {
		return []row{{from, to, false, legal}, {from, to, true, legal}}
	}
	var rows []row
	rows = append(rows, any2(phaseNone, phaseClaimed, true)...)
	rows = append(rows, any2(phaseClaimed, phaseRunning, true)...)
	rows = append(rows, any2(phaseClaimed, phaseUnknown, true)...)
	rows = append(rows, any2(phaseRunning, phaseTerminal, true)...)
	rows = append(rows, any2(phaseRunning, phaseUnknown, true)...)
	rows = append(rows, row{phaseUnknown, phaseTerminal, true, true})
	rows = append(rows, row{phaseUnknown, phaseTerminal, false, false})
	rows = append(rows, any2(phaseClaimed, phaseTerminal, false)...)
	rows = append(rows, any2(phaseClaimed, phaseClaimed, false)...)
	rows = append(rows, any2(phaseRunning, phaseRunning, false)...)
	rows = append(rows, any2(phaseRunning, phaseClaimed, false)...)
	rows = append(rows, any2(phaseUnknown, phaseClaimed, false)...)
	rows = append(rows, any2(phaseUnknown, phaseRunning, false)...)
	all := []phase{phaseNone, phaseClaimed, phaseRunning, phaseTerminal, phaseUnknown}
	for _, to := range all {
		rows = append(rows, any2(phaseTerminal, to, false)...)
		rows = append(rows, any2(to, phaseNone, false)...)
	}
	for _, r := range rows {
		t.Run(fmt.Sprintf("%s_to_%s_trust_%v", name(r.from), name(r.to), r.trust), func(t *testing.T) {
			expectTransition(t, r.from, r.to, r.trust, r.legal)
		})
	}
	// Exhaustive: exactly the legal rows above are legal.
	legal := map[[2]phase]int{}
	for _, r := range rows {
		if r.legal {
			legal[[2]phase{r.from, r.to}]++
		}
	}
	for _, from := range all {
		for _, to := range all {
			for _, trust := range []bool{false, true} {
				want := legal[[2]phase{from, to}] == 2 || (legal[[2]phase{from, to}] == 1 && trust)
				expectTransition(t, from, to, trust, want)
			}
		}
	}
	expectTransition(t, "dispatching", phaseTerminal, true, false)
	expectTransition(t, phaseRunning, "asserted", true, false)
}

func name(p phase) string {
	if p == phaseNone {
		return "none"
	}
	return string(p)
}

func expectTransition(t *testing.T, from, to phase, trust, legal bool) {
	t.Helper()
	err := checkTransition(from, to, trust)
	if legal && err != nil {
		t.Errorf("%s -> %s (trust %v): %v, want legal", name(from), name(to), trust, err)
	}
	if !legal {
		var te *transitionError
		if !errors.Is(err, errIllegalTransition) || !errors.As(err, &te) || te.From != from || te.To != to {
			t.Errorf("%s -> %s (trust %v): %v, want illegal", name(from), name(to), trust, err)
		}
	}
}
