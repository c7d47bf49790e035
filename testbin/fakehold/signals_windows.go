package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// x/sys/windows does not wrap SetConsoleCtrlHandler.
var procSetConsoleCtrlHandler = windows.NewLazySystemDLL("kernel32.dll").NewProc("SetConsoleCtrlHandler")

// setCtrlHandler adds h in front of the console handlers (they run newest
// first, and the first to return TRUE ends the dispatch), so it shadows the
// Go runtime's handler, which cannot tell CTRL_C from CTRL_BREAK.
func setCtrlHandler(h func(ctrl uint32) uintptr) error {
	if err := procSetConsoleCtrlHandler.Find(); err != nil {
		return err
	}
	if r, _, err := procSetConsoleCtrlHandler.Call(windows.NewCallback(h), 1); r == 0 {
		return fmt.Errorf("SetConsoleCtrlHandler: %w", err)
	}
	return nil
}

// installSignals maps console control events the way the supervisor does:
// CTRL_C is SIGINT (exit 130), CTRL_BREAK and CTRL_CLOSE are SIGTERM (exit
// 143). With --ignore-signals or --on-term none they are claimed and
// dropped (CTRL_CLOSE excepted with --on-term none: Windows ends the
// process after the handler anyway).
func (h *hold) installSignals() {
	cfg := h.cfg
	ch := make(chan int, 1)
	err := setCtrlHandler(func(ctrl uint32) uintptr {
		code := 0
		switch ctrl {
		case windows.CTRL_C_EVENT:
			code = 130
		case windows.CTRL_BREAK_EVENT, windows.CTRL_CLOSE_EVENT:
			code = 143
		default:
			return 0
		}
		if cfg.ignoreSignals || cfg.onTerm == "none" {
			return 1
		}
		select {
		case ch <- code:
		default:
		}
		if ctrl == windows.CTRL_CLOSE_EVENT {
			// Returning lets Windows end the process at once; blocking
			// gives onSignal the grace Windows allows (about 5 s) to
			// emit the shutdown event and exit with its own code.
			blockForever()
		}
		return 1
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakehold: console events: %v\n", err)
		os.Exit(70)
	}
	go func() { h.onSignal(<-ch) }()
}
