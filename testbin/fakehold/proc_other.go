//go:build !linux

package main

import "os"

func selfExe() (string, error) { return os.Executable() }
