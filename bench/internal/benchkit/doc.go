// Package benchkit is what the benchmark programs of scripts/bench.sh (bench/cmd/benchrun and
// bench/cmd/etcdbench) share: the command frame (one sub-command per call, one JSON object on stdout),
// the statistics of one round's samples, the process's CPU time, child processes that re-execute the
// program and speak JSON lines, and memory reports. It imports the standard library only.
package benchkit
