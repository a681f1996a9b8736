//go:build race

package profiles

// raceSlowdown scales wall-clock budgets: the race detector makes the validator several times slower.
const raceSlowdown = 8
