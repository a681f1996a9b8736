//go:build !race

package profiles

// raceSlowdown scales wall-clock budgets: 1 without the race detector.
const raceSlowdown = 1
