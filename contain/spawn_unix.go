//go:build unix

package contain

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// How our processes start each other, and what each does first. The parent
// starts a helper from this binary or the lean image with its hidden argv[1]
// (helpermain.go), the environment helperEnv gives, a session or process
// group of its own, and its descriptors at the fixed numbers below, one of
// them a socketpair to the parent. The helper marks what it inherited
// close-on-exec (adoptInherited), outlives the signals meant for its group
// (absorbSignals) and talks over fdCtl (inheritedConn). Which image each
// starts from is exe_*.go's; the order of the messages, wire.go's.

// Inherited descriptor numbers of the helper processes.
const (
	fdCtl  = 3 // socketpair to the parent helper
	fdOut  = 4 // the child's stdout: hold -> event pipe, worker -> chosen output
	fdErr  = 5 // the child's stderr
	fdLeaf = 6 // shim, cgroup backend: the group's cgroup leaf directory
	// guardian: the interlock file (Config.Interlock) and its host lock
	// (hostGate.shared), kept open and never passed on, so the locks outlive
	// a dead supervisor until the guardian has contained the run and exits.
	fdInterlock = 6
	fdHostLock  = 7
)

// adoptInherited marks every inherited descriptor from 3 up, and also the
// ones given (a helper's stdin, which may carry the embedded hold's token),
// close-on-exec. They arrive without the flag (dup2 clears it), and one that
// leaked into a worker or a hold would hand it the event pipe, a control
// channel, or whatever the supervisor's own caller left open
// (`octostore-supervisor ... 7>secret`). The helper keeps using its own; what
// it starts gets only what it passes in Files.
func adoptInherited(also ...int) error {
	for _, fd := range also {
		unix.CloseOnExec(fd)
	}
	if err := platform.CloexecFrom(3); err != nil {
		return fmt.Errorf("inherited descriptors: %w", err)
	}
	return nil
}

// absorbSignals keeps a helper alive through the TERM/INT/HUP a group signal or a
// careless caller sends. A Go handler (not SIG_IGN) is used on purpose: handled
// signals reset to default across exec, ignored ones would be inherited by the
// worker and make it deaf to our graceful TERM.
func absorbSignals() {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)
	go func() {
		for range ch {
		}
	}()
}

// socketpair returns two connected stream sockets, both close-on-exec. The
// first, ours, is non-blocking (pollable): its reader waits in the runtime's
// poller instead of holding an OS thread in read(2) for the whole run (see
// inheritedConn). The second, the one a child inherits, stays blocking: it may
// become a hold command's stdout, which expects a blocking write.
func socketpair() (*os.File, *os.File, error) {
	// Not every unix has SOCK_CLOEXEC; holding ForkLock keeps a concurrent
	// StartProcess from inheriting the pair before the flag is set.
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
		err = unix.SetNonblock(fds[0], true)
		if err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "ctl"), os.NewFile(uintptr(fds[1]), "ctl-peer"), nil
}

// inheritedConn is a helper's end of the control socket its parent made
// (fdCtl), made non-blocking first so that os.NewFile registers it with the
// runtime's poller. A blocking socket's reader holds an OS thread in read(2)
// for the whole run, and every such thread is one the thread reserve must
// cover (reserveThreads). The parent closes its copy of this end once the
// helper has started, so the flag changes nothing anyone else reads.
func inheritedConn() (*conn, error) {
	if err := unix.SetNonblock(fdCtl, true); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return newConn(os.NewFile(fdCtl, "ctl")), nil
}

// helperImages are the executables a run's helpers start from (helperImage).
type helperImages struct {
	guardian string   // the guardian's, and through its /proc/self/exe the shims'
	hold     *os.File // the embedded hold's, when guardian is the lean image; else nil
	release  func()   // once the guardian runs
}

// holdStart is what launchGuardian needs to know of a run's embedded hold.
type holdStart struct {
	embedded bool     // Config.EmbeddedHold
	light    bool     // Config.LightHold
	image    *os.File // Config.holdImage: this process continues in the lean image
}

// highPath names img by a duplicate of its descriptor above imageFdMin. The
// child resolves the path after it has moved its descriptors into place (0..n,
// and up to n more while shuffling them; startHelper passes fewer than 10), so
// the image must sit above all of them.
func highPath(img *os.File) (string, func(), error) {
	high, err := unix.FcntlInt(img.Fd(), unix.F_DUPFD_CLOEXEC, imageFdMin)
	if err != nil {
		return "", nil, fmt.Errorf("move the program's image above the helper's descriptors: %w", err)
	}
	return "/proc/self/fd/" + strconv.Itoa(high), func() { unix.Close(high) }, nil
}

// imageFdMin is the lowest descriptor number highPath gives an image.
const imageFdMin = 32

// startHelper re-executes this binary (exe: selfExe or helperImage) as a helper
// with the given descriptors as fds 0..n and its own process group.
func startHelper(exe, arg string, files []*os.File, setsid bool) (int, error) {
	return startProcess(exe, []string{"octostore-supervisor", arg}, helperEnv(), files, setsid)
}

// helperEnv is the whole environment of a helper.
// profstackdepth=0: the runtime gives every thread two buffers for the stacks
// of profiling samples (2.2 KB at the default depth), and nothing profiles a
// helper; with the thread reserve that is about 50 KB a run (docs/benchmarks.md).
// It cannot be a //go:debug line: the go command accepts only the settings
// it knows there, and this one is the runtime's alone.
func helperEnv() []string {
	return []string{"GOTRACEBACK=single", "GODEBUG=profstackdepth=0", "GOMAXPROCS=" + strconv.Itoa(helperProcs)}
}

// startProcess starts one of our own processes (a helper, the embedded hold's
// root) in a session or process group of its own.
func startProcess(exe string, argv, env []string, files []*os.File, setsid bool) (int, error) {
	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = f.Fd()
	}
	attr := &syscall.ProcAttr{Env: env, Files: fds, Sys: &syscall.SysProcAttr{Setsid: setsid, Setpgid: !setsid}}
	pid, _, err := syscall.StartProcess(exe, argv, attr)
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", argv[1], err)
	}
	return pid, nil
}
