//go:build race

package salt_test

// raceEnabled: the race detector instruments memory and distorts allocation measurements.
const raceEnabled = true
