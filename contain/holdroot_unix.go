//go:build unix

package contain

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// HoldRootArg is the hidden argv[1] of the embedded hold when it roots its own
// group: the guardian starts the supervisor's binary with it, followed by the
// hold's own arguments, which `ps` shows as they are.
const HoldRootArg = "__octostore-hold-root"

// Hold runs the embedded hold to its end and returns its exit status: the
// octostore client's main with the given streams, its environment this
// process's own. Its signal handling is its own, as in a process of its own:
// SIGTERM and SIGINT, once it has installed its handlers, mean "release".
type Hold func(stdin io.Reader, stdout, stderr io.Writer) int

// HoldRootMain runs the embedded hold as the root of its own group, where a
// hold command of the user's runs under a shim. A shim exists to root a tree
// whose programs may fork, daemonize and ignore signals; the embedded hold is
// this binary's own code and starts no process, so its group is the one
// process and the shim would be a whole Go process per run that roots nothing
// (about a fifth of a run's memory at scale, docs/benchmarks.md,
// "What we tried, and what we kept"). What the
// shim did for the group, this process does itself:
//   - it speaks the shim's protocol on fd 3, so the guardian treats the group
//     like any other: it reports the hold's exit (opExited) and turns opRelease
//     into the SIGTERM a hold of its own process would get;
//   - it reports the exit and then waits, alive, until the guardian kills it
//     after proving its group empty, so its pid stays the guardian's unreaped
//     child for that whole time and can never name another process;
//   - if the guardian goes (its socket reads EOF) it exits at once, which
//     ends the hold as the shim's SIGKILL did: nothing may hold authority for
//     a run nobody contains any more.
//
// Descriptors are the shim's: 0 the hold's stdin, 3 the guardian's socket, 4
// the event channel (made the hold's stdout, fd 1), 5 its stderr (also fd 2,
// and closed); no cgroup leaf, since it starts nothing.
func HoldRootMain(hold Hold) int {
	// Before anything else, as for the hold in a process of its own: its event
	// channel and token are the supervisor's, not the worker's to take.
	if err := platform.SetNonDumpable(); err != nil {
		fmt.Fprintf(os.Stderr, "octostore-supervisor embedded hold: %v\n", err)
		return ExitSoftware
	}
	// No reserve of threads (reserveThreads): a shim must outlive a worker's
	// pid exhaustion to reap and kill its tree, but this process has no tree,
	// and its crash is the hold's exit, which the guardian reports and the
	// supervisor contains like any other.
	// The event pipe becomes fd 1, the hold's stdout as in a process of its
	// own (a write to it once the supervisor is gone is a SIGPIPE, as it was).
	// Its stderr is also fd 2, which is all the hold writes to.
	if err := errors.Join(unix.Dup2(fdOut, 1), unix.Close(fdOut), unix.Close(fdErr), adoptInherited(0)); err != nil {
		fmt.Fprintf(os.Stderr, "octostore-supervisor embedded hold: %v\n", err)
		return ExitSoftware
	}
	c, err := inheritedConn()
	if err != nil {
		fmt.Fprintf(os.Stderr, "octostore-supervisor embedded hold: %v\n", err)
		return ExitSoftware
	}
	init, err := c.recv()
	if err != nil || init.Op != opInit {
		fmt.Fprintf(os.Stderr, "octostore-supervisor embedded hold: no start request: %v\n", err)
		return ExitSoftware
	}
	if err := c.send(msg{Op: opReady, Reply: true, Pid: os.Getpid()}); err != nil {
		return ExitSoftware
	}
	done := make(chan int, 1)
	go func() {
		code := hold(os.Stdin, os.Stdout, os.Stderr)
		// The end of the stream is how the supervisor learns the hold is done.
		os.Stdout.Close()
		done <- code
	}()
	return holdRoot{c: c}.serve(done)
}

type holdRoot struct{ c *conn }

// serve answers the guardian until it goes away.
func (h holdRoot) serve(done <-chan int) int {
	in := h.c.pump()
	for {
		select {
		case m, ok := <-in:
			if !ok {
				// The guardian is gone, or killed us a moment ago.
				return ExitSoftware
			}
			if m.Op == opRelease {
				h.release()
			}
		case code := <-done:
			done = nil
			_ = h.c.send(msg{Op: opExited, Code: code})
		}
	}
}

// release delivers the SIGTERM the hold's handlers act on, exactly as the
// shim sent it to a hold of its own process.
func (holdRoot) release() {
	if err := unix.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		fmt.Fprintf(os.Stderr, "octostore-supervisor embedded hold: release: %v\n", err)
	}
}
