package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
)

// cpuSnapshot is the CPU time so far of the lab's Salt processes, this process and the whole
// machine, so that a throughput round can say which of them the load was bound by.
type cpuSnapshot struct {
	at             time.Time
	master, minion time.Duration // the lab master's (A) and the lab minion's process trees
	self           time.Duration
	busy, total    time.Duration // the machine: all CPUs, non-idle and all
}

// clockTick is USER_HZ, the unit of /proc times (100 on every Linux this runs on).
const clockTick = 10 * time.Millisecond

// takeCPUSnapshot reads /proc. labDir is the lab's directory: the master is the salt-master
// whose config is <labDir>/etc, the minion the salt-minion with the same config.
func takeCPUSnapshot(labDir string) cpuSnapshot {
	s := cpuSnapshot{at: time.Now(), self: benchkit.CPUTime()}
	cfg := filepath.Join(labDir, "etc")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if len(args) < 2 || args[len(args)-2] != "-c" || args[len(args)-1] != cfg {
			continue
		}
		var bin string
		for _, a := range args {
			if strings.HasSuffix(a, "salt-master") || strings.HasSuffix(a, "salt-minion") {
				bin = filepath.Base(a)
			}
		}
		t := procCPU(e.Name())
		switch bin {
		case "salt-master":
			s.master += t
		case "salt-minion":
			s.minion += t
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		f := strings.Fields(string(line))
		for i, x := range f[1:] {
			v, _ := strconv.ParseInt(x, 10, 64)
			d := time.Duration(v) * clockTick
			s.total += d
			if i != 3 && i != 4 { // idle, iowait
				s.busy += d
			}
		}
	}
	return s
}

// procCPU is utime + stime of one process (its exited children are not counted: a Salt master's
// worker processes live as long as it does).
func procCPU(pid string) time.Duration { return procStatCPU(pid, false) }

// procStatCPU is utime + stime of one process from /proc/PID/stat, plus cutime + cstime (its waited-for
// children) when children is set; 0 when the process is gone.
func procStatCPU(pid string, children bool) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	fields := []int{11, 12}
	if children {
		fields = append(fields, 13, 14)
	}
	if len(f) <= fields[len(fields)-1] {
		return 0
	}
	var sum int64
	for _, k := range fields {
		v, _ := strconv.ParseInt(f[k], 10, 64)
		sum += v
	}
	return time.Duration(sum) * clockTick
}

// cpuUse reports, between two snapshots, the CPU each part used in cores (1.0 = one CPU busy
// the whole time) and the machine's busy share of all its CPUs.
func cpuUse(a, b cpuSnapshot) map[string]float64 {
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 {
		return nil
	}
	cores := func(d time.Duration) float64 { return benchkit.Round3(d.Seconds() / wall) }
	out := map[string]float64{"master_cores": cores(b.master - a.master), "minion_cores": cores(b.minion - a.minion),
		"client_cores": cores(b.self - a.self), "cpus": float64(runtime.NumCPU())}
	if t := b.total - a.total; t > 0 {
		out["machine_busy_share"] = benchkit.Round3(float64(b.busy-a.busy) / float64(t))
	}
	return out
}
