//go:build unix && !linux

package main

import "errors"

func becomeSubreaper() error { return errors.New("--kill needs a child subreaper (Linux)") }
