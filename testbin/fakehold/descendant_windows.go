package main

import "golang.org/x/sys/windows"

// becomeImmune makes the descendant ignore CTRL_C, CTRL_BREAK and CTRL_CLOSE
// as far as Windows lets a process (CTRL_CLOSE still ends it once the handler
// returns).
func becomeImmune() error {
	return setCtrlHandler(func(ctrl uint32) uintptr {
		switch ctrl {
		case windows.CTRL_C_EVENT, windows.CTRL_BREAK_EVENT, windows.CTRL_CLOSE_EVENT:
			return 1
		}
		return 0
	})
}
