package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// insideModes says --inside and --reach exist: they read Linux's /proc.
const insideModes = true

// inside writes what the worker sees of itself and its surroundings: its
// identity lines from /proc/self/status (Uid, Gid, Groups, NoNewPrivs), its
// pid, its open descriptors ("fd N TARGET"; the Go runtime's own among them),
// the pids its /proc lists and pid 1's command.
func inside(out string) {
	var lines []string
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		die("--inside: %v", err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		for _, k := range []string{"Uid:", "Gid:", "Groups:", "NoNewPrivs:"} {
			if strings.HasPrefix(l, k) {
				lines = append(lines, strings.Join(strings.Fields(l), " "))
			}
		}
	}
	lines = append(lines, fmt.Sprintf("pid %d", os.Getpid()))
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		die("--inside: %v", err)
	}
	names, _ := d.Readdirnames(-1)
	var fds []int
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd != int(d.Fd()) {
			fds = append(fds, fd)
		}
	}
	d.Close()
	sort.Ints(fds)
	for _, fd := range fds {
		target, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		lines = append(lines, fmt.Sprintf("fd %d %s", fd, target))
	}
	ents, _ := os.ReadDir("/proc")
	var procs []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			procs = append(procs, pid)
		}
	}
	sort.Ints(procs)
	lines = append(lines, "procs "+strings.Trim(fmt.Sprint(procs), "[]"))
	cmd, _ := os.ReadFile("/proc/1/cmdline")
	lines = append(lines, "proc1 "+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	if err := writeFileAtomic(out, []byte(strings.Join(lines, "\n")+"\n")); err != nil {
		die("--inside: %v", err)
	}
}

// reach waits for the test to write the supervisor side's pids into list
// (one a line, then "end"), tries against each what a hostile worker would
// (signal, stop, ptrace, read its environment, list and open its
// descriptors) and opens its own cgroup's control files for writing (without
// writing). It records "ok WHAT" or "fail WHAT: ERR" per attempt in
// list.out, then creates list.done. A stop that succeeds is undone at once.
func reach(list string) {
	pids := waitPidList(list)
	var a attempts
	rec := a.rec
	runtime.LockOSThread() // ptrace requests belong to the thread that made them
	for _, pid := range pids {
		rec(fmt.Sprintf("signal-0 %d", pid), unix.Kill(pid, 0))
		err := unix.Kill(pid, syscall.SIGSTOP)
		if err == nil {
			_ = unix.Kill(pid, syscall.SIGCONT)
		}
		rec(fmt.Sprintf("SIGSTOP %d", pid), err)
		rec(fmt.Sprintf("ptrace %d", pid), unix.PtraceSeize(pid))
		_, err = os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		rec(fmt.Sprintf("read /proc/%d/environ", pid), err)
		_, err = os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		rec(fmt.Sprintf("list /proc/%d/fd", pid), err)
		for fd := range 3 {
			p := fmt.Sprintf("/proc/%d/fd/%d", pid, fd)
			rec("open-write "+p, openClose(p, os.O_WRONLY|syscall.O_NONBLOCK))
		}
	}
	if top, parent, err := migrateTargets(); err == nil {
		// parent is the parent cgroup's procs file; our own cgroup is the
		// directory below it that /proc/self/cgroup names.
		cg, _ := os.ReadFile("/proc/self/cgroup")
		rel, _ := ownCgroup2(string(cg))
		for _, f := range []string{"cgroup.procs", "cgroup.kill", "cgroup.freeze", "cgroup.subtree_control"} {
			p := filepath.Join(filepath.Dir(parent), filepath.Base(rel), f)
			if parent == top {
				p = filepath.Join(filepath.Dir(top), f)
			}
			rec("open-write "+p, openClose(p, os.O_WRONLY))
		}
	}
	if err := writeFileAtomic(list+".out", []byte(a.String())); err != nil {
		die("--reach: %v", err)
	}
	touch(list + ".done")
}

// waitPidList waits (30 s at most) until list is complete.
func waitPidList(list string) []int {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		f, err := os.Open(list)
		if err != nil {
			continue
		}
		var pids []int
		complete := false
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if sc.Text() == "end" {
				complete = true
				break
			}
			if pid, err := strconv.Atoi(sc.Text()); err == nil {
				pids = append(pids, pid)
			}
		}
		f.Close()
		if complete {
			return pids
		}
	}
	die("--reach: %s was not completed within 30s", list)
	return nil
}
