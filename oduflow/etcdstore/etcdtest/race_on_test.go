//go:build race

package etcdtest

// raceEnabled: the race detector slows the in-process member several fold (a compaction scans every
// key under its lock), so history-sized tests use smaller histories under it.
const raceEnabled = true
