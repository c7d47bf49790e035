//go:build !windows

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// installSignals wires SIGTERM (143) and SIGINT (130) to onSignal, or drops
// them with --ignore-signals / --on-term none. Windows, which has console
// control events instead, is in signals_windows.go.
func (h *hold) installSignals() {
	cfg := h.cfg
	ch := make(chan os.Signal, 4)
	if cfg.ignoreSignals || cfg.onTerm == "none" {
		// signal.Notify instead of signal.Ignore: an ignored disposition
		// would be inherited across exec by anything this hold spawns,
		// whereas a caught one is reset to the default.
		sigs := []os.Signal{syscall.SIGTERM, syscall.SIGINT}
		if cfg.ignoreSignals {
			sigs = append(sigs, syscall.SIGHUP)
		}
		signal.Notify(ch, sigs...)
		go func() {
			for range ch {
			}
		}()
		return
	}
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-ch
		code := 143
		if sig == syscall.SIGINT {
			code = 130
		}
		h.onSignal(code)
	}()
}
