//go:build !windows

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// checkExecutable decides, before anything starts, whether execve(2) will run
// the regular file abs: an execute bit for anyone (the reference's `-x` test),
// and a format the kernel loads - this system's native image, or a "#!" line
// whose interpreter exists and is executable. Anything else the kernel refuses
// only at execve with ENOEXEC, which for a worker is after the hold has taken
// authority.
func checkExecutable(abs string, st fs.FileInfo) error {
	if st.Mode().Perm()&0o111 == 0 {
		return errors.New("no execute permission (chmod +x)")
	}
	head, err := readHead(abs)
	if err != nil {
		return err
	}
	if bytes.HasPrefix(head, []byte("#!")) {
		return checkInterpreter(head[2:])
	}
	if nativeImage(head) {
		return nil
	}
	return fmt.Errorf("not %s binary, and no #! line names an interpreter (a script needs a first line such as #!/bin/sh)", nativeFormat())
}

// readHead reads what the kernel looks at first: the image magic or the "#!"
// line (Linux reads at most 256 bytes of it, BINPRM_BUF_SIZE).
func readHead(abs string) ([]byte, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// checkInterpreter checks the interpreter a "#!" line names: the first word
// after optional blanks, as the kernel splits it. A relative one is resolved
// against the working directory, as execve does.
func checkInterpreter(line []byte) error {
	line, _, _ = bytes.Cut(line, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) == 0 {
		return errors.New("its #! line names no interpreter")
	}
	interp, err := filepath.Abs(string(fields[0]))
	if err != nil {
		return err
	}
	st, err := os.Stat(interp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("its #! interpreter %s does not exist", interp)
	case err != nil:
		return fmt.Errorf("its #! interpreter: %w", err)
	case st.IsDir():
		return fmt.Errorf("its #! interpreter %s is a directory", interp)
	case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("its #! interpreter %s is not an executable file", interp)
	}
	return nil
}

// nativeImage reports whether head starts with this system's executable image
// magic: Mach-O (thin 32/64-bit, either byte order, or universal) on macOS,
// ELF elsewhere.
func nativeImage(head []byte) bool {
	if runtime.GOOS != "darwin" {
		return bytes.HasPrefix(head, []byte("\x7fELF"))
	}
	for _, magic := range []string{"\xfe\xed\xfa\xce", "\xce\xfa\xed\xfe", "\xfe\xed\xfa\xcf", "\xcf\xfa\xed\xfe", "\xca\xfe\xba\xbe"} {
		if bytes.HasPrefix(head, []byte(magic)) {
			return true
		}
	}
	return false
}

func nativeFormat() string {
	if runtime.GOOS == "darwin" {
		return "a Mach-O"
	}
	return "an ELF"
}
