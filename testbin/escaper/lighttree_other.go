//go:build !linux && !darwin

package main

// lightModes is false: parseArgs refuses --light-tree with exit 64 ("mode
// not supported on this OS").
const lightModes = false

func startLight(int, string) error { return errUnsupported }
