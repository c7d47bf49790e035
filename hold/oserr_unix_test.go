//go:build unix

package hold

// The OS error texts the messages embed, as glibc and macOS word them (the
// errnos 2 and 21 are the same on both).
const (
	errTextNotFound = "No such file or directory (os error 2)"
	errTextIsDir    = "Is a directory (os error 21)"
	// An empty OCTOSTORE_TOKEN_FILE is opened (O_NOFOLLOW) and not found.
	errTokenFileEmpty = "could not open OCTOSTORE_TOKEN_FILE safely: " + errTextNotFound
)
