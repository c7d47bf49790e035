package contain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// A worker with --private-pids is not the init of its PID namespace itself:
// our own binary is, re-executed as PidInitMain. Three reasons. A namespace's
// init ignores every signal it has no handler for, so an ordinary program
// (a shell script, say) as pid 1 would sit out the teardown's TERM and always
// take the KILL after the grace. The init inherits every orphan of the
// namespace and must reap them, which ordinary programs do not. And the
// namespace's own /proc has to be mounted after the clone and before the
// program runs, which exec gives no place for. bubblewrap's --unshare-pid
// runs such an init for the same reasons; systemd's PrivatePIDs= makes the
// service itself pid 1 and documents that it must cope.
//
// Unlike bubblewrap's, our init does not forward signals: the teardown and
// run's forwarding already signal every process of the group one by one
// (seen from outside, the namespace's processes are ordinary members of the
// tree), so a forwarded copy would reach the worker twice, and a program
// that takes a second Ctrl-C as "force quit" would abort. The init only
// survives the TERM, INT and HUP meant for the group (a handler that drops
// them), so that it cannot end the namespace before the worker shut down.
//
// The init is born where the worker would have been (in its cgroup leaf
// through clone3, or through the join helper; in the shim's process group
// otherwise), so containment is unchanged: from outside the namespace its
// whole tree is an ordinary subtree of the shim, swept and proven as before.
// The namespace adds a second kernel guarantee: when the init exits, the
// kernel kills everything left inside.

// pidNS clones a PID and a mount namespace, and returns the init's MAP
// argument. As root nothing else is needed (MAP "-"). Unprivileged, a user
// namespace comes with them in which the init maps only our own uid and gid
// onto themselves (MAP "UID:GID"; no other identity exists inside). The init
// writes that mapping itself: the shim that starts it is not dumpable, so its
// child's /proc files are root's and the shim could not write them. The init
// keeps CAP_SYS_ADMIN over its namespace as an ambient capability, for the
// mapping and the new /proc, and drops it before the worker starts.
func pidNS() (*syscall.SysProcAttr, string) {
	sys := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
	if os.Geteuid() == 0 {
		return sys, "-"
	}
	sys.Cloneflags |= syscall.CLONE_NEWUSER
	sys.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	own := WorkerUser{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())}
	return sys, own.spec()
}

// isolate returns what the shim execs for a worker and how: the program
// itself (under its worker user, if any); or, behind the fence, our
// pre-start helper, or under --private-pids our PID-namespace init, each of
// which takes the worker user only for the program it execs or starts (wait:
// only once told through its fd 3; follow: the fd of the shim's pidfd the
// init ends with, 0 for none).
func isolate(iso *Isolation, argv []string, wait bool, follow int) (string, []string, *syscall.SysProcAttr, error) {
	sys := &syscall.SysProcAttr{}
	if !iso.waitsAhead() {
		if iso != nil && iso.User != nil {
			sys.Credential = credential(iso.User)
		}
		return argv[0], argv, sys, nil
	}
	exe, err := selfExe()
	if err != nil {
		return "", nil, nil, err
	}
	words := []string{"octostore-supervisor", PrestartArg, iso.User.spec()}
	if iso.PrivatePids {
		var mapping string
		sys, mapping = pidNS()
		words = []string{"octostore-supervisor", PidInitArg, mapping, iso.User.spec()}
	}
	if wait {
		words = append(words, pidWaitArg)
	}
	if iso.Fence {
		words = append(words, fenceArg)
	}
	if follow != 0 {
		words = append(words, followArg+strconv.Itoa(follow))
	}
	return exe, slices.Concat(words, []string{"--"}, argv), sys, nil
}

// shimPidfd is a pidfd of this shim for a --private-pids worker's init to
// end with (endWithShim); nil for any other program.
func (p program) shimPidfd() (*os.File, error) {
	if p.iso == nil || !p.iso.PrivatePids {
		return nil, nil
	}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open of the shim, for its namespace init to follow (Linux 5.3): %w", err)
	}
	return os.NewFile(uintptr(fd), "shim pidfd"), nil
}

// privatePidsProbe starts the init in a new namespace with nothing to run and
// reports why that failed, if it did.
func privatePidsProbe() error {
	exe, err := selfExe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	sys, mapping := pidNS()
	cmd := exec.Command(exe, PidInitArg, mapping, "-", "--")
	cmd.Args[0] = "octostore-supervisor"
	cmd.Stderr = &stderr
	cmd.SysProcAttr = sys
	if err := cmd.Run(); err != nil {
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = err.Error()
		}
		switch {
		case os.Geteuid() != 0:
			why += "; unprivileged, it needs user namespaces (" + userNSState() + ")"
		case !platform.HasCapSysAdmin():
			why += "; as root it needs CAP_SYS_ADMIN, which this supervisor lacks (as in a container started without it)"
		}
		return fmt.Errorf("a PID namespace with its own /proc cannot be created here: %s", why)
	}
	return nil
}

// userNSState says what the host's settings allow for unprivileged user
// namespaces, for diagnostics.
func userNSState() string {
	state := "max_user_namespaces=" + readTrim("/proc/sys/user/max_user_namespaces")
	if readTrim("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" {
		state += "; AppArmor restricts unprivileged ones (kernel.apparmor_restrict_unprivileged_userns=1)"
	}
	if v := readTrim("/proc/sys/kernel/unprivileged_userns_clone"); v == "0" {
		state += "; kernel.unprivileged_userns_clone=0"
	}
	return state
}

// PidInitMain is the init of a worker's PID namespace (see the top of this
// file): `__octostore-pidinit MAP UID:GID|- [--wait] [--fence]
// [--follow=FD] -- PROGRAM ARGS...` (MAP: see pidNS; the rest:
// parseHelperOpts). It mounts the namespace's own /proc, builds the worker's
// fence, starts PROGRAM (as UID:GID with no supplementary groups, when
// given, and behind the fence), survives the group's TERM, INT, HUP, QUIT,
// USR1 and USR2 (PROGRAM gets its own copy from whoever signals the group),
// reaps every orphan, and exits with PROGRAM's status (128+signal when it
// was killed) as soon as PROGRAM ends, or at once when its shim is gone; the
// kernel then kills whatever else is left in the namespace.
//
// It takes its threads first, before the worker exists, as the helpers do:
// it shares the worker's cgroup and pids.max, a fork bomb there would leave
// it no thread to grow into, and the Go runtime aborts when clone fails
// (seen in the systemd VM under --max-processes 32: the namespace ended with
// exit 2). They count against --max-processes.
func PidInitMain(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "octostore-supervisor pid init: "+format+"\n", a...)
		return ExitSoftware
	}
	reserveThreads()
	// Nothing but 0-2 (and the start pipe, read and closed below) may reach
	// the worker.
	if err := adoptInherited(); err != nil {
		return fail("%v", err)
	}
	// Before the first fork, so no signal is lost.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	ns, err := setUpNamespace(args)
	if err != nil {
		return fail("%v", err)
	}
	if len(ns.argv) == 0 {
		return ExitOK // the probe: the namespace works
	}
	env, ok, err := startEnv(ns.opts, func() ([]string, bool, error) { return awaitStart(sigs) })
	if err != nil {
		return fail("%v", err)
	}
	if !ok {
		return ExitOK
	}
	pid, err := startWorkerInNS(ns.argv, env, ns.user, ns.fence)
	if err != nil {
		return fail("start %s: %v", ns.argv[0], err)
	}
	return reapUntil(pid, sigs)
}

// initNS is what PidInitMain set up before the worker can start.
type initNS struct {
	opts  helperOpts
	user  *WorkerUser
	fence *platform.Fence // nil: the worker starts without
	argv  []string
}

// setUpNamespace reads the init's arguments, maps its ids, mounts the
// namespace's /proc, builds the worker's fence (after the mount, which a
// fenced thread could not make) and starts following the shim.
func setUpNamespace(args []string) (*initNS, error) {
	if len(args) < 3 {
		return nil, errors.New("bad arguments")
	}
	own, err := parseUserSpec(args[0])
	if err != nil {
		return nil, err
	}
	ns := &initNS{}
	if ns.user, err = parseUserSpec(args[1]); err != nil {
		return nil, err
	}
	if ns.opts, ns.argv, err = parseHelperOpts(args[2:]); err != nil {
		return nil, err
	}
	if ns.opts.follow != 0 {
		go endWithShim(ns.opts.follow)
	}
	if err := mapOwnIDs(own); err != nil {
		return nil, err
	}
	// Only now: a non-dumpable process's /proc files are root's, its
	// uid_map included.
	if err := platform.SetNonDumpable(); err != nil {
		return nil, err
	}
	if err := mountOwnProc(); err != nil {
		return nil, err
	}
	if ns.opts.fence && len(ns.argv) > 0 {
		if ns.fence, err = workerFence(); err != nil {
			return nil, err
		}
	}
	return ns, nil
}

// endWithShim ends the init, and with it everything in its namespace, when
// the shim that started it is gone: the pidfd at fd turns readable then.
// PR_SET_PDEATHSIG would not do: it follows the parent thread, and the shim
// starts the init from a thread it then throws away.
func endWithShim(fd int) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1)
		if err == nil && n > 0 {
			os.Exit(ExitSoftware)
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			fmt.Fprintf(os.Stderr, "octostore-supervisor pid init: follow the shim: %v\n", err)
			os.Exit(ExitSoftware)
		}
	}
}

// reapUntil reaps every process that ends in the namespace and returns
// PROGRAM's exit code (pid) once it has ended.
func reapUntil(pid int, sigs <-chan os.Signal) int {
	for s := range sigs {
		if s != syscall.SIGCHLD {
			continue // the group's signal; see the top of this file
		}
		for {
			var ws unix.WaitStatus
			got, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if got <= 0 || err != nil {
				break
			}
			if got == pid {
				code, _ := exitCodeOf(ws)
				return code
			}
		}
	}
	return ExitSoftware
}

// mapOwnIDs maps our own uid and gid onto themselves in a fresh user
// namespace (nil: there is none). setgroups must be denied first: an
// unprivileged mapping may not let anyone drop a group that denies access.
//
// The init starts non-dumpable (it is exec'd from an image its user may not
// read), and a non-dumpable process's /proc files are root's, its uid_map
// included. So it is made dumpable for these three writes and non-dumpable
// again right after (PidInitMain), before any worker code exists. Only
// processes of its own user outside the namespace could attach meanwhile,
// and they hold every capability over the user namespace they own anyway.
func mapOwnIDs(own *WorkerUser) error {
	if own == nil {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 1) to map our ids: %w", err)
	}
	for _, w := range []struct{ file, data string }{
		{"/proc/self/setgroups", "deny"},
		{"/proc/self/uid_map", fmt.Sprintf("%d %d 1", own.Uid, own.Uid)},
		{"/proc/self/gid_map", fmt.Sprintf("%d %d 1", own.Gid, own.Gid)},
	} {
		if err := os.WriteFile(w.file, []byte(w.data), 0); err != nil {
			return fmt.Errorf("map our own ids in the user namespace: %w", err)
		}
	}
	return nil
}

// mountOwnProc gives the namespace a /proc of its own. The whole tree is made
// private first: the namespace's mounts are copies of the host's, and a mount
// on a shared one would propagate back to the host.
func mountOwnProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mount namespace private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount the namespace's /proc: %w", err)
	}
	return nil
}

// awaitStart waits for the start message on fd 3 (pidWaitArg); false
// means the worker is not to start.
func awaitStart(sigs <-chan os.Signal) ([]string, bool, error) {
	type result struct {
		b   []byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		f := os.NewFile(3, "start")
		b, err := io.ReadAll(f)
		f.Close()
		got <- result{b, err}
	}()
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM || s == syscall.SIGINT || s == syscall.SIGHUP {
				return nil, false, nil // a teardown before the gate
			}
		case r := <-got:
			if r.err != nil {
				return nil, false, fmt.Errorf("read the start message: %w", r.err)
			}
			return decodeStart(r.b)
		}
	}
}

// decodeStart reads a start message: the worker's added environment, a JSON
// array of KEY=VALUE; empty (the pipe closed unwritten) means no start.
func decodeStart(b []byte) ([]string, bool, error) {
	if len(b) == 0 {
		return nil, false, nil
	}
	var env []string
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, false, fmt.Errorf("decode the start message: %w", err)
	}
	return env, true, nil
}

// startWorkerInNS starts the worker with the init's descriptors 0-2 and
// the given environment, from a thread of its own that has dropped the ambient
// capability the init kept for mounting, so the worker starts with none, and
// that stands behind the fence when there is one.
func startWorkerInNS(argv, env []string, u *WorkerUser, fence *platform.Fence) (int, error) {
	sys := &syscall.SysProcAttr{}
	if u != nil {
		sys.Credential = credential(u)
	}
	type result struct {
		pid int
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			done <- result{0, fmt.Errorf("drop ambient capabilities: %w", err)}
			return
		}
		if fence != nil {
			if err := enterFence(fence); err != nil {
				done <- result{0, err}
				return
			}
		}
		pid, _, err := syscall.StartProcess(argv[0], argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}, Sys: sys})
		done <- result{pid, err}
	}()
	r := <-done
	return r.pid, r.err
}
