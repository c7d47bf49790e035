package main

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// unixModes is false: sessions, process groups, signals, zombies and /proc
// probing do not exist here, and parseArgs refuses those flags with exit 64.
// The Windows counterparts are the windowsModes.
const unixModes = false

// windowsModes says --detached, --orphan, --new-group, --breakaway and
// --ignore-console exist.
const windowsModes = true

// Go delivers CTRL_C and CTRL_BREAK as os.Interrupt and CTRL_CLOSE,
// LOGOFF and SHUTDOWN as SIGTERM.
var termSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// x/sys/windows does not wrap SetConsoleCtrlHandler.
var procSetConsoleCtrlHandler = windows.NewLazySystemDLL("kernel32.dll").NewProc("SetConsoleCtrlHandler")

// ignoreCtrl is the console handler of --ignore-console. Handlers run
// newest first and the first that returns TRUE ends the dispatch, so it
// shadows the Go runtime's handler, which would turn the event into
// os.Interrupt and, with nobody listening, let the default handler exit.
var ignoreCtrl = windows.NewCallback(func(ctrlType uint32) uintptr {
	switch ctrlType {
	case windows.CTRL_C_EVENT, windows.CTRL_BREAK_EVENT:
		return 1
	}
	return 0
})

// ignoreTermSignals makes this process ignore CTRL_C and CTRL_BREAK, the
// console's "signals". SetConsoleCtrlHandler(NULL, TRUE) additionally makes
// CTRL_C ignored in processes we create before they run any code (Windows
// passes that flag on), the counterpart of an inherited SIG_IGN; CTRL_BREAK
// cannot be inherited as ignored, so each spawned escaper installs the
// handler itself, first thing.
func ignoreTermSignals() {
	if err := procSetConsoleCtrlHandler.Find(); err != nil {
		die("ignore-console: %v", err)
	}
	if r, _, err := procSetConsoleCtrlHandler.Call(ignoreCtrl, 1); r == 0 {
		die("ignore-console: SetConsoleCtrlHandler: %v", err)
	}
	// Fails in a process without a console (DETACHED_PROCESS); the handler
	// above already covers this process, so only inheritance is lost.
	_, _, _ = procSetConsoleCtrlHandler.Call(0, 1)
}

// roleAttrs gives each Windows role the creation flag that is its escape
// attempt.
func roleAttrs(cmd *exec.Cmd, role string) {
	var flags uint32
	switch role {
	case "detached":
		// No console at all: console control events cannot reach it.
		flags = windows.DETACHED_PROCESS
	case "newgroup":
		// Its own console process group: CTRL_BREAK sent to the worker's
		// group misses it.
		flags = windows.CREATE_NEW_PROCESS_GROUP
	case "breakaway":
		// Leaves the job if the job allows it (BREAKAWAY_OK); a
		// containing job makes CreateProcess fail with access denied.
		flags = windows.CREATE_BREAKAWAY_FROM_JOB
	}
	if flags != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: flags}
	}
}

func setsid() error            { return errUnsupported }
func setpgid(int, int) error   { return errUnsupported }
func getpgid(int) (int, error) { return 0, errUnsupported }
func ignoreHUP()               {}
func dropPrivileges(int) error { return errUnsupported }
func detachStderr() error      { return errUnsupported }
func tamper(string)            { die("--tamper: %v", errUnsupported) }

// killAll: Windows has no kill(-1).
func killAll(string) { die("--kill-all: %v", errUnsupported) }
