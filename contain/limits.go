package contain

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// What ended a tree, in Report.LimitHit (`limit_hit` in the containment
// object), when a limit did.
const (
	LimitMemory  = "memory"  // the kernel killed for memory (cgroup: memory.events oom_kill; job: its memory-limit notification)
	LimitPids    = "pids"    // a fork was refused at the process limit (cgroup: pids.events max; job: its active-process notification)
	LimitTimeout = "timeout" // run --timeout passed
)

// minMemoryMax is the smallest --memory-max taken: below it a worker cannot
// even be executed, and a bare number that small is far more likely a size
// whose suffix was forgotten (64 for 64M) than a limit anyone meant.
const minMemoryMax = 1 << 20

// maxCPUMilli bounds --cpu-max so that its cpu.max quota (CPUMilli × 100 µs
// per 100 ms) fits the kernel's and Windows' integers with room to spare.
const maxCPUMilli = 1 << 20

// ParseMemoryMax reads a --memory-max SIZE: a decimal number of bytes, or
// of KiB, MiB or GiB with a K, M or G after it (either case).
func ParseMemoryMax(s string) (int64, error) {
	num, unit := s, int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			num, unit = s[:n-1], 1<<10
		case 'm', 'M':
			num, unit = s[:n-1], 1<<20
		case 'g', 'G':
			num, unit = s[:n-1], 1<<30
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v <= 0 || num[0] == '+' {
		return 0, fmt.Errorf("--memory-max %q is not a size: a whole number of bytes, or with K, M or G (e.g. 512M)", s)
	}
	if v > math.MaxInt64/unit {
		return 0, fmt.Errorf("--memory-max %q is too large", s)
	}
	if v*unit < minMemoryMax {
		hint := ""
		if unit == 1 {
			hint = " (a bare number is bytes: add K, M or G)"
		}
		return 0, fmt.Errorf("--memory-max %q is below 1M, the least a worker tree can run in%s", s, hint)
	}
	return v * unit, nil
}

// ParseCPUMax reads a --cpu-max CPUS, a decimal number of CPUs with at most
// three decimals (0.5, 2, 1.25), into thousandths of a CPU. The least is
// 0.01: cpu.max takes no quota below 1 ms per 100 ms period.
func ParseCPUMax(s string) (int, error) {
	bad := fmt.Errorf("--cpu-max %q is not a number of CPUs: a decimal such as 0.5 or 2, at most three decimals", s)
	whole, frac, dot := strings.Cut(s, ".")
	if (whole == "" && frac == "") || len(frac) > 3 || (dot && frac == "") || !digitsOrEmpty(whole) || !digitsOrEmpty(frac) {
		return 0, bad
	}
	if len(whole) > 7 {
		return 0, fmt.Errorf("--cpu-max %q is too large", s)
	}
	w, _ := strconv.Atoi("0" + whole)
	f, _ := strconv.Atoi((frac + "000")[:3])
	milli := w*1000 + f
	switch {
	case milli > maxCPUMilli:
		return 0, fmt.Errorf("--cpu-max %q is too large", s)
	case milli < 10:
		return 0, fmt.Errorf("--cpu-max %q is below 0.01 CPU, the least cpu.max can give", s)
	}
	return milli, nil
}

func digitsOrEmpty(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// formatCPUs writes thousandths of a CPU as the decimal the user gave.
func formatCPUs(milli int) string {
	s := strconv.FormatFloat(float64(milli)/1000, 'f', 3, 64)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

// limitsAsked reports whether the request asked for a resource limit.
func (req BackendRequest) limitsAsked() bool {
	return req.MaxSet || req.MemoryMax > 0 || req.CPUMilli > 0
}

// limitFlags names the limit flags the request gave, for a refusal.
func (req BackendRequest) limitFlags() string {
	var f []string
	if req.MemoryMax > 0 {
		f = append(f, "--memory-max")
	}
	if req.CPUMilli > 0 {
		f = append(f, "--cpu-max")
	}
	if req.MaxSet {
		f = append(f, "--max-processes")
	}
	return strings.Join(f, " and ")
}

// limitNotes describes the memory and CPU limits for the start line.
func limitNotes(b Backend) []string {
	var n []string
	if b.MemoryMax > 0 {
		n = append(n, fmt.Sprintf("memory limit %d bytes", b.MemoryMax))
	}
	if b.CPUMilli > 0 {
		n = append(n, "CPU limit "+formatCPUs(b.CPUMilli)+" CPUs")
	}
	return n
}
