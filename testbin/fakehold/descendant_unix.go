//go:build unix

package main

import (
	"os/signal"
	"syscall"
)

// becomeImmune makes the descendant shrug off TERM, INT and HUP.
func becomeImmune() error {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	return nil
}
