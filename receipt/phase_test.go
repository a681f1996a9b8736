package receipt

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/errors"
)

// TestTransitionTable has one row per line of the table in doc.go, and then
// checks that every other pair is illegal.
func TestTransitionTable(t *testing.T) {
	type row struct {
		from, to Phase
		trust    bool
		legal    bool
	}
	any2 := func(from, to Phase, legal bool) []row {
		return []row{{from, to, false, legal}, {from, to, true, legal}}
	}
	var rows []row
	rows = append(rows, any2(PhaseNone, PhaseClaimed, true)...)
	rows = append(rows, any2(PhaseClaimed, PhaseRunning, true)...)
	rows = append(rows, any2(PhaseClaimed, PhaseUnknown, true)...)
	rows = append(rows, any2(PhaseRunning, PhaseTerminal, true)...)
	rows = append(rows, any2(PhaseRunning, PhaseUnknown, true)...)
	rows = append(rows, row{PhaseUnknown, PhaseTerminal, true, true})
	rows = append(rows, row{PhaseUnknown, PhaseTerminal, false, false})
	rows = append(rows, any2(PhaseClaimed, PhaseTerminal, false)...)
	rows = append(rows, any2(PhaseClaimed, PhaseClaimed, false)...)
	rows = append(rows, any2(PhaseRunning, PhaseRunning, false)...)
	rows = append(rows, any2(PhaseRunning, PhaseClaimed, false)...)
	rows = append(rows, any2(PhaseUnknown, PhaseClaimed, false)...)
	rows = append(rows, any2(PhaseUnknown, PhaseRunning, false)...)
	all := []Phase{PhaseNone, PhaseClaimed, PhaseRunning, PhaseTerminal, PhaseUnknown}
	for _, to := range all {
		rows = append(rows, any2(PhaseTerminal, to, false)...)
		rows = append(rows, any2(to, PhaseNone, false)...)
	}
	for _, r := range rows {
		t.Run(fmt.Sprintf("%s_to_%s_trust_%v", name(r.from), name(r.to), r.trust), func(t *testing.T) {
			checkTransition(t, r.from, r.to, r.trust, r.legal)
		})
	}
	// Exhaustive: exactly the legal rows above are legal.
	legal := map[[2]Phase]int{}
	for _, r := range rows {
		if r.legal {
			legal[[2]Phase{r.from, r.to}]++
		}
	}
	for _, from := range all {
		for _, to := range all {
			for _, trust := range []bool{false, true} {
				want := legal[[2]Phase{from, to}] == 2 || (legal[[2]Phase{from, to}] == 1 && trust)
				checkTransition(t, from, to, trust, want)
			}
		}
	}
	checkTransition(t, "dispatching", PhaseTerminal, true, false)
	checkTransition(t, PhaseRunning, "asserted", true, false)
}

func name(p Phase) string {
	if p == PhaseNone {
		return "none"
	}
	return string(p)
}

func checkTransition(t *testing.T, from, to Phase, trust, legal bool) {
	t.Helper()
	err := CheckTransition(from, to, trust)
	if legal && err != nil {
		t.Errorf("%s -> %s (trust %v): %v, want legal", name(from), name(to), trust, err)
	}
	if !legal {
		var te *TransitionError
		if !errors.Is(err, ErrIllegalTransition) || !errors.As(err, &te) || te.From != from || te.To != to {
			t.Errorf("%s -> %s (trust %v): %v, want illegal", name(from), name(to), trust, err)
		}
	}
}
