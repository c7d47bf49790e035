//go:build linux

package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The few cgroup v2 file operations the supervisor needs, written directly on
// the cgroupfs files instead of through containerd/cgroups/v3. Every helper
// process (guardian, shims) links them, and a Go process runs the package
// initialisation of everything its binary links: containerd/cgroups/v3 brings
// protobuf (its stats types), cilium/ebpf (device rules), godbus and logrus.
// Measured on a static build here, a program that only links cgroup2 idles at
// 5.7 MB RSS against 2.3 MB without it (docs/benchmarks.md,
// "What we tried, and what we kept"), in every helper of every run.

// MakeCgroup creates the cgroup dir below top, the highest cgroup whose
// cgroup.subtree_control is ours to write (the cgroup v2 mount, or a cgroup
// delegated to us). With pidsMax > 0 it also enables the pids controller for
// dir (enableController) and sets dir's pids.max. A failure removes dir again.
func MakeCgroup(top, dir string, pidsMax int) (err error) {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	defer func() {
		if err != nil {
			_ = unix.Rmdir(dir)
		}
	}()
	if pidsMax <= 0 {
		return nil
	}
	if err := enableController(top, filepath.Dir(dir), "pids"); err != nil {
		return err
	}
	return writeCgroupFile(dir, "pids.max", strconv.Itoa(pidsMax))
}

// enableController enables a controller for the children of dir: in every
// cgroup.subtree_control from top down to dir, where only the last write,
// dir's own, must succeed (the ones above may have it enabled already). Never
// above top: on a systemd host that is the cgroup systemd delegated to us,
// and what lies above it is systemd's alone to write.
func enableController(top, dir, name string) error {
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("%s is not below %s, the highest cgroup ours to write", dir, top)
	}
	dirs := []string{top}
	if rel != "." {
		for _, part := range strings.Split(rel, "/") {
			dirs = append(dirs, filepath.Join(dirs[len(dirs)-1], part))
		}
	}
	var last error
	for _, d := range dirs {
		last = writeCgroupFile(d, "cgroup.subtree_control", "+"+name)
	}
	if last != nil {
		return fmt.Errorf("enable the %s controller in %s: %w", name, dir, last)
	}
	return nil
}

// KillCgroup SIGKILLs every process in dir and below at once through
// cgroup.kill. Kernels before 5.14 have no cgroup.kill; there the cgroup is
// frozen (so nothing in it can fork while it is listed), each member is killed
// through a pidfd (KillCgroupMembers) and it is thawed: a frozen process still
// dies of SIGKILL in cgroup v2. The caller waits for the cgroup to empty.
func KillCgroup(dir string) error {
	err := writeCgroupFile(dir, "cgroup.kill", "1")
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, serr := os.Stat(dir); serr != nil {
		return err // the cgroup is gone, not its cgroup.kill
	}
	return killFrozen(dir)
}

// freezeBound is how long killFrozen waits for the freeze to take hold. A task
// in uninterruptible sleep delays it; the members are killed either way, and
// the caller's wait kills again whatever appears after the listing.
const freezeBound = 100 * time.Millisecond

// killFrozen is KillCgroup without cgroup.kill: freeze, kill each, thaw.
func killFrozen(dir string) error {
	if err := writeCgroupFile(dir, "cgroup.freeze", "1"); err != nil {
		return err
	}
	_, ferr := WaitCgroupEvent(dir, "frozen", true, freezeBound)
	kerr := KillCgroupMembers(dir)
	return errors.Join(ferr, kerr, writeCgroupFile(dir, "cgroup.freeze", "0"))
}

// cgroupKillBatch bounds the pidfds KillCgroupMembers holds open at once.
const cgroupKillBatch = 1024

// KillCgroupMembers SIGKILLs the processes listed in dir and below, each
// through a pidfd known to name a member: the pidfds are opened first, then
// the cgroup is listed again, and only a pid still listed is signalled. A pid
// reaped and reused elsewhere in between is no longer listed; one reused
// inside the cgroup leaves the pidfd naming a dead process, and the new member
// is found by the caller's next look.
func KillCgroupMembers(dir string) error {
	listed, err := CgroupProcs(dir)
	if err != nil {
		return err
	}
	for len(listed) > 0 {
		batch := listed[:min(len(listed), cgroupKillBatch)]
		listed = listed[len(batch):]
		fds := make(map[int]int, len(batch))
		for _, pid := range batch {
			if fd, err := unix.PidfdOpen(pid, 0); err == nil {
				fds[pid] = fd
			}
		}
		still, err := CgroupProcs(dir)
		for _, pid := range still {
			if fd, ok := fds[pid]; ok && err == nil {
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// CgroupProcs lists the processes in dir and every cgroup below it. Only
// directories are descended into, told apart by the type the directory read
// returns, so no control file is stat'ed. A cgroup below dir that is removed
// during the walk held nothing (the kernel removes only empty cgroups) and is
// skipped; dir itself must exist.
func CgroupProcs(dir string) ([]int, error) {
	var pids []int
	err := cgroupProcs(dir, &pids, true)
	return pids, err
}

func cgroupProcs(dir string, pids *[]int, top bool) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var entries []os.DirEntry
	if err == nil {
		entries, err = os.ReadDir(dir)
	}
	if err != nil {
		if !top && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENODEV)) {
			return nil
		}
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("%s/cgroup.procs: %q is not a pid", dir, f)
		}
		*pids = append(*pids, pid)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := cgroupProcs(filepath.Join(dir, e.Name()), pids, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// CgroupCPUMicros reads usage_usec from dir/cpu.stat: the CPU time of
// everything that ran in the cgroup and below, which the kernel keeps even
// without the cpu controller.
func CgroupCPUMicros(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s/cpu.stat has no usage_usec", dir)
}

// CPUPeriodMicros is the period of every cpu.max SetCgroupLimits writes:
// the kernel's default, so a quota of n CPUs is n × 100 ms per 100 ms.
const CPUPeriodMicros = 100_000

// CgroupLimits are the resource limits SetCgroupLimits puts on a cgroup.
type CgroupLimits struct {
	MemoryMax      int64 // memory.max in bytes; 0: none
	CPUQuotaMicros int   // cpu.max quota per CPUPeriodMicros; 0: none
}

// SetCgroupLimits enables the controllers l needs for dir (enableController,
// from top down) and writes l into dir. A memory limit comes with
// memory.swap.max 0, so the limit is not dodged into swap (where the kernel
// accounts no swap it must have none to use), and memory.oom.group 1, so an
// OOM kill takes every process in dir at once instead of one process of a
// tree that then runs on without it.
func SetCgroupLimits(top, dir string, l CgroupLimits) error {
	parent := filepath.Dir(dir)
	if l.MemoryMax > 0 {
		if err := enableController(top, parent, "memory"); err != nil {
			return err
		}
		if err := writeCgroupFile(dir, "memory.max", strconv.FormatInt(l.MemoryMax, 10)); err != nil {
			return fmt.Errorf("set memory.max in %s: %w", dir, err)
		}
		if err := writeCgroupFile(dir, "memory.swap.max", "0"); err != nil && (!errors.Is(err, fs.ErrNotExist) || SwapActive()) {
			return fmt.Errorf("set memory.swap.max in %s: %w", dir, err)
		}
		if err := writeCgroupFile(dir, "memory.oom.group", "1"); err != nil {
			return fmt.Errorf("set memory.oom.group in %s: %w", dir, err)
		}
	}
	if l.CPUQuotaMicros > 0 {
		if err := enableController(top, parent, "cpu"); err != nil {
			return err
		}
		if err := writeCgroupFile(dir, "cpu.max", fmt.Sprintf("%d %d", l.CPUQuotaMicros, CPUPeriodMicros)); err != nil {
			return fmt.Errorf("set cpu.max in %s: %w", dir, err)
		}
	}
	return nil
}

// LiftCPULimits sets cpu.max to "max" in dir and in every cgroup below it,
// so that processes about to be killed there get the CPU time their exit
// needs: a tree held to a small CPU share (--cpu-max 0.01, or a limit a
// worker set on a cgroup of its own) runs its SIGKILL only in its slices of
// each period, which a teardown's proof bound may not wait for. Errors are
// ignored: a cgroup without the cpu controller has no cpu.max, and the kill
// goes ahead either way.
func LiftCPULimits(dir string) {
	_ = writeCgroupFile(dir, "cpu.max", "max")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			LiftCPULimits(filepath.Join(dir, e.Name()))
		}
	}
}

// SwapActive reports whether any swap area is in use (/proc/swaps lists one
// below its header line).
func SwapActive() bool {
	b, err := os.ReadFile("/proc/swaps")
	return err != nil || strings.Count(strings.TrimSpace(string(b)), "\n") > 0
}

// CgroupCounters reads the values of keys from the flat-keyed file
// dir/name ("key value" lines: memory.events, pids.events, cpu.stat); a key
// the file lacks reads 0.
func CgroupCounters(dir, name string, keys ...string) ([]uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(keys))
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, " ")
		for i, want := range keys {
			if k == want {
				out[i], _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			}
		}
	}
	return out, nil
}

// writeCgroupFile writes value to the control file dir/name in one write, as
// the kernel takes it.
func writeCgroupFile(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	return errors.Join(err, f.Close())
}
