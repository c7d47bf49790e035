package hold

import "golang.org/x/sys/windows"

// The OS error texts the messages embed. Windows words them through
// FormatMessage, and Wine words them differently from Windows ("File not
// found." against "The system cannot find the file specified."), so the
// expectations pin the error number and the format and take the words from
// the system.
var (
	errTextNotFound = osErrorText(windows.ERROR_FILE_NOT_FOUND)
	// Reading a directory's handle is an invalid function, not EISDIR.
	errTextIsDir = osErrorText(windows.ERROR_INVALID_FUNCTION)
	// CreateFile of the empty path reports a path, not a file, not found.
	errTokenFileEmpty = "could not open OCTOSTORE_TOKEN_FILE: " + osErrorText(windows.ERROR_PATH_NOT_FOUND)
)
