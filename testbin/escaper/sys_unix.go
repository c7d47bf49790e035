//go:build unix

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// unixModes says the session, group, signal and /proc based modes exist.
const unixModes = true

var termSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

func setsid() error {
	_, err := unix.Setsid()
	return err
}

func setpgid(pid, pgid int) error { return unix.Setpgid(pid, pgid) }

func getpgid(pid int) (int, error) { return unix.Getpgid(pid) }

// ignoreTermSignals sets SIG_IGN in the kernel (not a Go handler): that is
// the disposition a misbehaving worker really has, and SIGHUP/SIGINT stay
// ignored across exec. SIGTERM is re-ignored by each spawned escaper itself,
// because the Go runtime installs its own handler for it at start-up.
func ignoreTermSignals() { signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP) }

func ignoreHUP() { signal.Ignore(syscall.SIGHUP) }

// dropPrivileges changes identity the way a setuid-style helper does: the
// supplementary groups first, then the group, then the user (after which
// the others would no longer be allowed). The syscall package applies each
// call to every thread of the process.
func dropPrivileges(uid int) error {
	if err := syscall.Setgroups([]int{}); err != nil {
		return fmt.Errorf("setgroups([]): %w", err)
	}
	if err := syscall.Setgid(uid); err != nil {
		return fmt.Errorf("setgid(%d): %w", uid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid(%d): %w", uid, err)
	}
	return nil
}

// detachStderr points fd 2 at /dev/null, closing whatever it was before.
func detachStderr() error {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	return unix.Dup2(int(null.Fd()), 2)
}

// tamper tries what a same-UID worker could do to its supervisor and records
// each attempt. It opens files for writing but writes no bytes, and sends no
// signal other than 0: the point is to show what is reachable, not to break
// the run that is being tested.
func tamper(out string) {
	var a attempts
	rec := a.rec

	if ready := os.Getenv("OCTOSTORE_SUPERVISOR_READY_FILE"); ready == "" {
		rec("list state dir", fmt.Errorf("OCTOSTORE_SUPERVISOR_READY_FILE is not set"))
	} else {
		dir := filepath.Dir(ready)
		names, err := listDir(dir)
		rec(fmt.Sprintf("list %s [%s]", dir, strings.Join(names, " ")), err)
		for _, n := range names {
			p := filepath.Join(dir, n)
			if p == ready {
				continue
			}
			// O_NONBLOCK so a FIFO without a reader fails (ENXIO) instead of
			// hanging the worker.
			rec("write "+p, openClose(p, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK))
		}
		created := filepath.Join(dir, fmt.Sprintf("escaper-tamper.%d", os.Getpid()))
		rec("create "+created, openClose(created, os.O_WRONLY|os.O_CREATE|os.O_EXCL))
	}

	ppid := os.Getppid()
	fdDir := fmt.Sprintf("/proc/%d/fd", ppid)
	fds, err := listDir(fdDir)
	rec(fmt.Sprintf("list %s [%s]", fdDir, strings.Join(fds, " ")), err)
	for _, fd := range fds {
		p := filepath.Join(fdDir, fd)
		target, _ := os.Readlink(p)
		rec(fmt.Sprintf("open-read %s (%s)", p, target), openClose(p, os.O_RDONLY|syscall.O_NONBLOCK))
		rec(fmt.Sprintf("open-write %s (%s)", p, target), openClose(p, os.O_WRONLY|syscall.O_NONBLOCK))
	}
	env := fmt.Sprintf("/proc/%d/environ", ppid)
	if b, err := os.ReadFile(env); err != nil {
		rec("read "+env, err)
	} else {
		// The size only: the content may hold secrets and this file is
		// evidence, not a leak.
		rec(fmt.Sprintf("read %s (%d bytes)", env, len(b)), nil)
	}
	rec(fmt.Sprintf("kill-0 %d", ppid), unix.Kill(ppid, 0))

	tmps := []string{"/tmp"}
	if t := os.Getenv("TMPDIR"); t != "" && filepath.Clean(t) != "/tmp" {
		tmps = append(tmps, filepath.Clean(t))
	}
	for _, t := range tmps {
		matches, err := filepath.Glob(filepath.Join(t, "octostore-supervisor.*"))
		rec(fmt.Sprintf("scan %s (%d matches)", t, len(matches)), err)
		for _, m := range matches {
			if fi, err := os.Stat(m); err != nil || !fi.IsDir() {
				continue
			}
			names, err := listDir(m)
			rec(fmt.Sprintf("list %s [%s]", m, strings.Join(names, " ")), err)
		}
	}

	if err := appendLine(out, a.String()); err != nil {
		die("tamper: %v", err)
	}
}

// attempts records what a probe tried: "ok WHAT" or "fail WHAT: ERR", a line each.
type attempts []string

func (a *attempts) rec(what string, err error) {
	if err != nil {
		*a = append(*a, fmt.Sprintf("fail %s: %v", what, err))
	} else {
		*a = append(*a, "ok "+what)
	}
}

func (a attempts) String() string { return strings.Join(a, "\n") + "\n" }

func listDir(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	names := make([]string, 0, len(es))
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, err
}

func openClose(p string, flag int) error {
	f, err := os.OpenFile(p, flag, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// killAll sends SIGKILL to every process this process may signal (kill(-1)),
// and writes "called" or "failed: ERR" to path. kill(-1) spares the caller
// itself, so the escaper goes on. Its result says little: the kernel
// answers 0 when it found any process besides the caller, even if it was
// allowed to signal none of them; what survived is the answer.
func killAll(path string) {
	res := "called\n"
	if err := unix.Kill(-1, syscall.SIGKILL); err != nil {
		res = "failed: " + err.Error() + "\n"
	}
	if err := writeFileAtomic(path, []byte(res)); err != nil {
		die("kill-all: %v", err)
	}
}
