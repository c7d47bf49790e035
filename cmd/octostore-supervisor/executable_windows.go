package main

import (
	"io"
	"os"
)

// executable: Windows has no execute bit, and CreateProcess runs only a PE
// image (a batch file would need cmd.exe and its quoting rules), so the file
// must start with the "MZ" image signature.
func executable(abs string, _ os.FileInfo) bool {
	f, err := os.Open(abs)
	if err != nil {
		return false
	}
	defer f.Close()
	var sig [2]byte
	if _, err := io.ReadFull(f, sig[:]); err != nil {
		return false
	}
	return sig == [2]byte{'M', 'Z'}
}
