//go:build unix

package hold

import (
	"os"

	"golang.org/x/sys/unix"
)

// readSecretFile opens the token file without following a final symlink and
// checks the opened descriptor (not the path, so nothing can be swapped in
// between): regular file, owned by the effective uid, no group/other bits.
//
// O_NONBLOCK is added to what upstream uses so that a FIFO planted at the path
// is refused at once by the regular-file check instead of blocking the open
// until some writer appears; it has no effect on reading a regular file.
func readSecretFile(path, name string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not open "+name+" safely: "+osErrorText(err), err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", usageErrorCause(ErrToken, "could not inspect "+name+": "+osErrorText(err), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", usageError(ErrToken, name+" must be a regular file")
	}
	if int(st.Uid) != os.Geteuid() {
		return "", usageError(ErrToken, name+" must be owned by the current user")
	}
	if st.Mode&0o077 != 0 {
		return "", usageError(ErrToken, name+" must have owner-only permissions (chmod 600)")
	}
	raw, err := readAllUTF8(f)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not read "+name+": "+ioErrorText(err), err)
	}
	return raw, nil
}
