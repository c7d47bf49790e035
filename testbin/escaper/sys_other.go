//go:build !unix && !windows

package main

import (
	"os"
	"syscall"
)

// unixModes is false: sessions, process groups, ignored signals, zombies and
// /proc probing do not exist here, and parseArgs refuses those flags with
// exit 64 ("mode not supported on this OS").
const unixModes = false

var termSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

func setsid() error            { return errUnsupported }
func setpgid(int, int) error   { return errUnsupported }
func getpgid(int) (int, error) { return 0, errUnsupported }
func ignoreTermSignals()       {}
func ignoreHUP()               {}
func dropPrivileges(int) error { return errUnsupported }
func detachStderr() error      { return errUnsupported }
func tamper(string)            { die("--tamper: %v", errUnsupported) }
