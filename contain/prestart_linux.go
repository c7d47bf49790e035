package contain

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// The worker's fence (Isolation.Fence) is applied by the last of our
// processes before the worker: the pre-start helper, or the namespace init
// under --private-pids. Neither the shim nor the guardian can apply it. A
// seccomp filter on the shim's forking thread would refuse that thread's own
// clone3, the one that starts the worker inside its cgroup leaf; file rules
// there would refuse the join helper its write to cgroup.procs and the
// namespace init its mount of /proc. So a helper born in the worker's leaf
// builds and enters the fence while it waits for the gate (NewFence reads /,
// /sys and the mount table: off the gate path), and at the gate forks the
// worker from that thread (forkWorker). The gate costs a write and that
// fork and exec, as it cost the shim's fork and exec.

// Words between a worker helper's identity and "--" (PrestartMain,
// PidInitMain).
const (
	pidWaitArg = "--wait"    // wait for the start message on fd 3 (awaitStart)
	fenceArg   = "--fence"   // put the worker behind the fence (workerFence)
	followArg  = "--follow=" // N: fd N is the shim's pidfd; end with the shim
)

// helperOpts are those words, read.
type helperOpts struct {
	wait, fence bool
	follow      int // 0: none
}

// parseHelperOpts reads the words up to "--" and returns what follows it.
func parseHelperOpts(words []string) (helperOpts, []string, error) {
	var o helperOpts
	for i, w := range words {
		switch {
		case w == "--":
			return o, words[i+1:], nil
		case w == pidWaitArg:
			o.wait = true
		case w == fenceArg:
			o.fence = true
		case strings.HasPrefix(w, followArg):
			fd, err := strconv.Atoi(strings.TrimPrefix(w, followArg))
			if err != nil || fd < 3 {
				return o, nil, fmt.Errorf("bad %s%q", followArg, w)
			}
			o.follow = fd
		default:
			return o, nil, fmt.Errorf("unknown argument %q", w)
		}
	}
	return o, nil, errors.New(`no "--" before the program`)
}

// workerFence is the fence every worker stands behind: no write reaches a
// cgroup file system, so the worker cannot leave its cgroup, lift its
// limits, or freeze, kill or move anything of its own run or of another,
// even where those cgroups belong to its user (systemd's delegation). A
// grant beneath the worker's own leaf, for nested supervisors and container
// engines, is not offered: the kernel lets a process write a pid into
// cgroup.procs when it may write the destination and the common ancestor's
// cgroup.procs, a check Landlock does not see, so in a subtree delegated to
// the worker's user a writable leaf would let the worker pull any process of
// that subtree (every supervisor of its user among them) into its leaf and
// kill it there with cgroup.kill. Only a cgroup namespace rooted at the leaf
// closes that, which unprivileged needs a user namespace.
func workerFence() (*platform.Fence, error) {
	mounts, err := platform.CgroupMounts()
	if err != nil {
		return nil, fmt.Errorf("list the cgroup mounts to fence the worker from: %w", err)
	}
	return platform.NewFence(mounts)
}

// enterFence puts the calling, locked thread behind the fence (its file
// rules and clone3 refused). Without CAP_SYS_ADMIN (unprivileged, or root in
// a container) that needs no_new_privs, which is set first.
func enterFence(f *platform.Fence) error {
	if _, err := readyForLandlock(); err != nil {
		return err
	}
	if err := f.RestrictThread(); err != nil {
		return fmt.Errorf("fence the worker (--no-worker-scope starts it without): %w", err)
	}
	return nil
}

// PrestartMain is the pre-start helper: `__octostore-prestart UID:GID|-
// [--wait] --fence -- PROGRAM ARGS...`. Born where the worker would be (in
// its leaf, with its Landlock scope and no_new_privs), it builds and enters
// the fence, waits for the start message when told (fd 3 brings the
// worker's added environment; closed unwritten, or INT, TERM or HUP
// meanwhile, it exits 0 without), then forks PROGRAM as its parent's child,
// as UID:GID when given, writes its pid to fd 3 and exits: the worker has
// the shim for its parent and our cgroup and process group.
func PrestartMain(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "octostore-supervisor: pre-start: "+format+"\n", a...)
		return ExitSoftware
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := adoptInherited(); err != nil {
		return fail("%v", err)
	}
	if len(args) < 2 {
		return fail("bad arguments")
	}
	u, err := parseUserSpec(args[0])
	if err != nil {
		return fail("%v", err)
	}
	opts, argv, err := parseHelperOpts(args[1:])
	if err != nil || len(argv) == 0 || !opts.fence {
		return fail("bad arguments (%v)", err)
	}
	// The fence first, entered here, ahead of the gate, on the thread that
	// will fork: nothing of ours it keeps this helper from doing (it reads
	// and writes fd 3 and forks), and the gate then pays for the fork alone.
	// The worker's identity is taken in the child: with CAP_SYS_ADMIN the
	// fence needs no no_new_privs, so a --worker-user worker started with
	// --allow-new-privs keeps setuid programs working; the domain and the
	// filter stay with the child through setuid and exec.
	runtime.LockOSThread()
	fence, err := workerFence()
	if err == nil {
		err = enterFence(fence)
	}
	if err != nil {
		return fail("%v", err)
	}
	var started atomic.Bool
	env, ok, err := startEnv(opts, func() ([]string, bool, error) { return readStart(sigs, &started) })
	if err != nil {
		return fail("%v", err)
	}
	if !ok {
		return ExitOK
	}
	started.Store(true)
	pid, err := forkWorker(argv, env, u)
	if err != nil {
		return fail("start %s: %v", argv[0], err)
	}
	// A shim that is gone reads nothing: its group is being torn down.
	_, _ = unix.Write(3, strconv.AppendInt(nil, int64(pid), 10))
	return ExitOK
}

// forkWorker starts the worker from the calling, locked and fenced thread,
// with our descriptors 0-2 and, given u, as that user with no supplementary
// groups. CLONE_PARENT makes it our parent's child, so the shim reaps and
// reports it as it would a child it forked itself. A fork, not our own exec:
// exec from a Go process must first end its other threads and unmap its
// memory, measured at 0.3-0.5 ms on the gate path here; this child shares
// our memory until its exec (vfork) and has one thread.
func forkWorker(argv, env []string, u *WorkerUser) (int, error) {
	sys := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_PARENT}
	if u != nil {
		sys.Credential = credential(u)
	}
	return syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}, Sys: sys})
}

// startEnv is the worker's environment: ours, and what the start message
// adds (wait) when the helper waits for one. false: the worker is not to
// start.
func startEnv(opts helperOpts, wait func() ([]string, bool, error)) ([]string, bool, error) {
	env := os.Environ()
	if !opts.wait {
		return env, true, nil
	}
	added, ok, err := wait()
	return append(env, added...), ok, err
}

// readStart is awaitStart for the pre-start helper, on the calling thread, the
// one that will fork: a blocking read of fd 3 to its end, with no goroutine
// handing the message over (a hand-over to a locked thread is another
// wake-up on the gate path). A teardown's TERM, INT or HUP meanwhile ends the
// helper at once, from the goroutine that receives it: the worker never
// starts. Once started is set the helper outlives them for the instant it
// needs to name the worker it forked; the worker has its own copy.
func readStart(sigs <-chan os.Signal, started *atomic.Bool) ([]string, bool, error) {
	go func() {
		for range sigs {
			if !started.Load() {
				os.Exit(ExitOK)
			}
		}
	}()
	var msg []byte
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(3, buf)
		switch {
		case n > 0:
			msg = append(msg, buf[:n]...)
			continue
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, false, fmt.Errorf("read the start message: %w", err)
		}
		return decodeStart(msg)
	}
}

// addFence says whether the default fence works here, by doing it: it
// enters the fence and writes to a cgroup file this user could otherwise
// write, which must be refused.
func (d *Diagnosis) addFence() {
	on, why := fenceOffered(false)
	d.addRestriction(restriction{
		name: "worker fence (default)", offered: on,
		without: why + ": a worker may write whatever cgroups its user may; use --worker-user for untrusted workers",
		probe:   probeFence,
		does:    "entered by each worker: Landlock file rules and a clone3 filter keep it from writing any cgroup file, so it cannot leave its cgroup, lift its limits or freeze or kill other runs",
	})
}

// addScope says whether the default Landlock scope works here, by doing it:
// it enters the scope as the worker's start does and tries what the scope
// must refuse (probeScope).
func (d *Diagnosis) addScope() {
	on, why := workerScope(false)
	d.addRestriction(restriction{
		name: "worker scope (default)", offered: on,
		without: why + ": a worker of the supervisor's own user can signal, trace and end the supervisor side; use --worker-user or --private-pids for untrusted workers",
		probe:   probeScope,
		does:    "entered by each worker: its signals, ptrace and abstract-socket connects reach only its own tree",
	})
}

// restriction is one of the worker's default restrictions as doctor tries
// it: where it is offered, probe enters it on a thread thrown away after it
// and says what it tried.
type restriction struct {
	name, without, does string
	offered             bool
	probe               func() (string, error)
}

func (d *Diagnosis) addRestriction(r restriction) {
	if !r.offered {
		d.add(r.name, false, r.without)
		return
	}
	tried, err := onThrowawayThread(r.probe)
	if err != nil {
		d.add(r.name, false, err.Error())
		return
	}
	d.add(r.name, true, r.does+" ("+tried+")")
}

// probeScope enters the worker's scope on the calling, locked thread (under
// no_new_privs where that is needed, as the shim does) and checks that a
// connect to an abstract unix socket opened outside it is refused, and so is
// a signal to our parent when one is in view (none for a container's PID 1,
// nor under `podman exec`, whose parent is in another PID namespace).
func probeScope() (string, error) {
	how := "entered with CAP_SYS_ADMIN"
	underNNP, err := readyForLandlock()
	if err != nil {
		return "", err
	}
	if underNNP {
		how = "entered under no_new_privs (no CAP_SYS_ADMIN)"
	}
	outside, err := listenAbstract()
	if err != nil {
		return "", fmt.Errorf("open a socket to try the scope on: %w", err)
	}
	defer unix.Close(outside.fd)
	if err := platform.ScopeThread(); err != nil {
		return "", fmt.Errorf("enter it (--no-worker-scope starts the worker without): %w", err)
	}
	if err := outside.connect(); !errors.Is(err, unix.EPERM) {
		return "", fmt.Errorf("entered, but a connect to an abstract socket opened outside was not refused: %v", err)
	}
	tried := "a connect to an abstract socket opened outside refused"
	if ppid := os.Getppid(); ppid > 0 {
		if err := unix.Kill(ppid, 0); !errors.Is(err, unix.EPERM) {
			return "", fmt.Errorf("entered, but a signal to our parent (pid %d) was not refused: %v", ppid, err)
		}
		tried += ", a signal to our parent refused"
	}
	return how + "; tried: " + tried, nil
}

// abstractListener is a listening abstract unix socket of this process.
type abstractListener struct {
	fd   int
	addr unix.SockaddrUnix
}

// listenAbstract listens on an abstract name of the kernel's choosing
// (autobind), so no name of anyone else's is ever taken.
func listenAbstract() (abstractListener, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return abstractListener{}, err
	}
	l := abstractListener{fd: fd}
	if err := unix.Bind(fd, &unix.SockaddrUnix{}); err != nil {
		unix.Close(fd)
		return l, fmt.Errorf("autobind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err == nil {
		err = unix.Listen(fd, 1)
	}
	if err != nil {
		unix.Close(fd)
		return l, err
	}
	l.addr = *sa.(*unix.SockaddrUnix)
	return l, nil
}

// connect connects a new socket to the listener and reports the error.
func (l abstractListener) connect() error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &l.addr)
}

// onThrowawayThread runs probe on a locked thread that is thrown away after
// it (the goroutine exits locked): a probe restricts its thread for good.
func onThrowawayThread(probe func() (string, error)) (string, error) {
	type result struct {
		tried string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked
		tried, err := probe()
		done <- result{tried, err}
	}()
	r := <-done
	return r.tried, r.err
}

// probeFence enters the fence on the calling, locked thread and checks that
// a cgroup file this user may write (the v2 root's cgroup.procs as root, its
// own cgroup's otherwise) is refused there; it says what it tried.
func probeFence() (string, error) {
	fence, err := workerFence()
	if err != nil {
		return "", err
	}
	defer fence.Close()
	target, err := fenceProbeTarget()
	if err != nil {
		return "", err
	}
	if err := enterFence(fence); err != nil {
		return "", err
	}
	if target == "" {
		return "entered; this user may write no cgroup file to try a refusal on", nil
	}
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err == nil {
		f.Close()
		return "", errors.New("entered, but " + target + " could still be opened for writing")
	}
	if !errors.Is(err, fs.ErrPermission) {
		return "", fmt.Errorf("entered, but the probe of %s failed otherwise: %w", target, err)
	}
	return "tried: writing " + target + " refused", nil
}

// fenceProbeTarget is a cgroup file this user may write, by its permission
// bits (access(2), which Landlock does not answer), or "".
func fenceProbeTarget() (string, error) {
	mount, err := platform.CgroupV2Mount()
	if err != nil {
		return "", nil
	}
	dir := mount
	if os.Geteuid() != 0 {
		own, err := platform.OwnCgroupV2()
		if err != nil {
			return "", nil
		}
		dir = filepath.Join(mount, own)
	}
	target := filepath.Join(dir, "cgroup.procs")
	if unix.Access(target, unix.W_OK) != nil {
		return "", nil
	}
	return target, nil
}
