//go:build windows

package hold

import (
	"os"

	"golang.org/x/sys/windows"
)

// readTokenFile on Windows keeps upstream's only check (a regular file) and
// also refuses a reparse point (symlink or junction) at the final component:
// the handle is opened with FILE_FLAG_OPEN_REPARSE_POINT so it describes the
// link itself, and the checks run on that handle, not on the path.
func readTokenFile(path string) (string, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not open OCTOSTORE_TOKEN_FILE: "+err.Error(), err)
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, windows.FILE_SHARE_READ, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not open OCTOSTORE_TOKEN_FILE: "+osErrorText(err), err)
	}
	f := os.NewFile(uintptr(h), path)
	defer f.Close()
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return "", usageErrorCause(ErrToken, "could not inspect OCTOSTORE_TOKEN_FILE: "+osErrorText(err), err)
	}
	const notRegular = windows.FILE_ATTRIBUTE_DIRECTORY | windows.FILE_ATTRIBUTE_REPARSE_POINT | windows.FILE_ATTRIBUTE_DEVICE
	if info.FileAttributes&notRegular != 0 {
		return "", usageError(ErrToken, "OCTOSTORE_TOKEN_FILE must be a regular file")
	}
	raw, err := readAllUTF8(f)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not read OCTOSTORE_TOKEN_FILE: "+ioErrorText(err), err)
	}
	return raw, nil
}
