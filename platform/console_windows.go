package platform

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// x/sys/windows has the CTRL_* constants but not SetConsoleCtrlHandler.
var procSetConsoleCtrlHandler = windows.NewLazySystemDLL("kernel32.dll").NewProc("SetConsoleCtrlHandler")

// ConsoleHandler receives a console control event (windows.CTRL_C_EVENT,
// CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, ...) on a thread the system creates and
// returns whether it handled it; unhandled events go to the handlers
// registered before it (the Go runtime's, which maps them to os/signal).
type ConsoleHandler func(ctrlType uint32) (handled bool)

// AddConsoleHandler registers h in front of every handler registered so far
// (SetConsoleCtrlHandler). os/signal maps both CTRL_C_EVENT and
// CTRL_BREAK_EVENT to os.Interrupt; a handler of our own is how a caller tells
// them apart. The returned remove unregisters it. Each call uses one of the
// process's limited callback slots (windows.NewCallback), so it is meant for
// once per run, not per event.
func AddConsoleHandler(h ConsoleHandler) (remove func() error, err error) {
	if err := procSetConsoleCtrlHandler.Find(); err != nil {
		return nil, fmt.Errorf("SetConsoleCtrlHandler: %w", err)
	}
	cb := windows.NewCallback(func(ctrlType uint32) uintptr {
		if h(ctrlType) {
			return 1
		}
		return 0
	})
	if r, _, e := procSetConsoleCtrlHandler.Call(cb, 1); r == 0 {
		return nil, fmt.Errorf("SetConsoleCtrlHandler: %w", e)
	}
	return func() error {
		if r, _, e := procSetConsoleCtrlHandler.Call(cb, 0); r == 0 {
			return fmt.Errorf("SetConsoleCtrlHandler remove: %w", e)
		}
		return nil
	}, nil
}
