package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// checkExecutable: Windows has no execute bit, and CreateProcess runs only a PE
// image (a batch file would need cmd.exe and its quoting rules), so the file
// must start with the "MZ" image signature.
func checkExecutable(abs string, _ fs.FileInfo) error {
	f, err := os.Open(abs)
	if err != nil {
		return err
	}
	defer f.Close()
	var sig [2]byte
	if _, err := io.ReadFull(f, sig[:]); err != nil || sig != [2]byte{'M', 'Z'} {
		return errors.New("not a Windows program (a PE image starting with MZ)")
	}
	return nil
}
