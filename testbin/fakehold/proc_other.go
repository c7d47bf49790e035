//go:build !linux && !darwin

package main

import "os"

// selfStartTime is not implemented here, so --pidfile is refused with 64.
func selfStartTime() (string, error) { return "", errUnsupported }

func selfExe() (string, error) { return os.Executable() }
