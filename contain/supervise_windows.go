package contain

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/platform"
)

// The supervisor's platform pieces on Windows, the counterparts of those in
// supervise_unix.go. The host itself, job objects in place of the guardian, is
// host_windows.go.

// eventChannel is the hold's stdout (w) and the supervisor's end of it (r): an
// anonymous pipe, which no other process can open by name.
func eventChannel() (r, w *os.File, err error) { return os.Pipe() }

// consoleSignal maps the console control events a handler of ours takes to the
// signal the lifecycle acts on: Ctrl-C is SIGINT (exit 130), Ctrl-Break is
// SIGTERM (143). os/signal cannot tell the two apart (both arrive as
// os.Interrupt), hence the handler. Close, logoff and shutdown are left to the
// Go runtime's handler, which delivers them as SIGTERM through os/signal and
// keeps the handler thread blocked, so Windows waits for our teardown instead
// of ending the process as soon as a handler returns.
func consoleSignal(ctrlType uint32) (syscall.Signal, bool) {
	switch ctrlType {
	case windows.CTRL_C_EVENT:
		return syscall.SIGINT, true
	case windows.CTRL_BREAK_EVENT:
		return syscall.SIGTERM, true
	}
	return 0, false
}

// catchSignals routes console control events to sigs (consoleSignal); the
// returned func stops the routing.
func catchSignals(sigs chan os.Signal, diag io.Writer) func() {
	signal.Notify(sigs, syscall.SIGTERM)
	remove, err := platform.AddConsoleHandler(func(ctrlType uint32) bool {
		sig, ok := consoleSignal(ctrlType)
		if !ok {
			return false
		}
		select {
		case sigs <- sig:
		default: // a burst of events: one is enough to stop
		}
		return true
	})
	if err != nil {
		// Still stop on every event, if without telling Ctrl-Break from Ctrl-C.
		fmt.Fprintf(diag, "octostore-supervisor: %v: Ctrl-Break will count as Ctrl-C\n", err)
		signal.Notify(sigs, os.Interrupt)
		return func() { signal.Stop(sigs) }
	}
	return func() {
		_ = remove()
		signal.Stop(sigs)
	}
}

// prepareSupervisor has nothing to do on Windows: no earlier run can be left
// behind (its jobs died with its handles), and there is no pid limit to
// reserve threads against.
func prepareSupervisor(Config, io.Writer) error { return nil }
