//go:build !race

package etcdtest

// raceEnabled: see race_on_test.go.
const raceEnabled = false
