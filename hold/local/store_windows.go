package local

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/hold"
)

// defaultLocalDir is %LOCALAPPDATA%\octostore, which inherits the per-user
// ACL of the profile.
func defaultLocalDir(env hold.LookupEnv) (string, error) {
	var v string
	if env != nil {
		v, _ = env("LOCALAPPDATA")
	}
	if !filepath.IsAbs(v) {
		return "", usageError(errStateDir, "LOCALAPPDATA is not set to an absolute path; use --server file:///C:/path/to/dir")
	}
	return filepath.Join(v, "octostore"), nil
}

// dirFromFileURLPath turns "/C:/dir" (the path of file:///C:/dir) into C:\dir.
// UNC shares (file://server/share) are refused earlier: they are network
// file systems.
func dirFromFileURLPath(p string) (string, bool) {
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:]
	}
	dir := filepath.Clean(filepath.FromSlash(p))
	if !filepath.IsAbs(dir) || strings.HasPrefix(dir, `\\`) {
		return "", false
	}
	return dir, true
}

// fileURLPath is the URL path of a directory: C:\dir → /C:/dir.
func fileURLPath(dir string) string { return "/" + filepath.ToSlash(dir) }

// Access rights that let a trustee change what a directory contains. For a
// directory FILE_WRITE_DATA is FILE_ADD_FILE and FILE_APPEND_DATA is
// FILE_ADD_SUBDIRECTORY; x/sys has no name for FILE_DELETE_CHILD (0x40).
const (
	fileDeleteChild = 0x40
	dirWriteMask    = windows.FILE_WRITE_DATA | windows.FILE_APPEND_DATA | fileDeleteChild |
		windows.DELETE | windows.WRITE_DAC | windows.WRITE_OWNER | windows.GENERIC_WRITE | windows.GENERIC_ALL
)

// checkStateDirOwnership reads the opened directory's security descriptor. A
// private store must be owned by this user (or by Administrators when this
// token belongs to them, since elevated tokens create objects owned by that
// group); no store may let Everyone, Anonymous, Authenticated Users or Users
// change its contents — Windows has no sticky bit to make that safe.
func checkStateDirOwnership(d *os.File, dir string, shared bool) error {
	sd, err := windows.GetSecurityInfo(windows.Handle(d.Fd()), windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return stateDirErrorCause(err, "could not read the security of local state directory %s: %s", dir, hold.OSErrorText(err))
	}
	if !shared {
		owner, _, err := sd.Owner()
		if err != nil {
			return stateDirErrorCause(err, "could not read the owner of local state directory %s: %s", dir, hold.OSErrorText(err))
		}
		ok, err := ownedByCurrentUser(owner)
		if err != nil {
			return stateDirErrorCause(err, "could not identify the current user: %s", hold.OSErrorText(err))
		}
		if !ok {
			return stateDirError("local state directory %s is owned by another user (%s); refusing it", dir, owner.String())
		}
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return stateDirErrorCause(err, "could not read the access list of local state directory %s: %s", dir, hold.OSErrorText(err))
	}
	if dacl == nil {
		// A NULL DACL grants everyone full control.
		return stateDirError("local state directory %s has no access list (everyone may change it); refusing it", dir)
	}
	broad := []windows.WELL_KNOWN_SID_TYPE{windows.WinWorldSid, windows.WinAnonymousSid,
		windows.WinAuthenticatedUserSid, windows.WinBuiltinUsersSid}
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return stateDirErrorCause(err, "could not read the access list of local state directory %s: %s", dir, hold.OSErrorText(err))
		}
		if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || ace.Header.AceFlags&windows.INHERIT_ONLY_ACE != 0 ||
			ace.Mask&dirWriteMask == 0 {
			continue
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		for _, t := range broad {
			if sid.IsWellKnown(t) {
				return stateDirError("local state directory %s is writable by %s; refusing it", dir, sid.String())
			}
		}
	}
	return nil
}

func ownedByCurrentUser(owner *windows.SID) (bool, error) {
	token := windows.GetCurrentProcessToken()
	user, err := token.GetTokenUser()
	if err != nil {
		return false, err
	}
	if owner.Equals(user.User.Sid) {
		return true, nil
	}
	if !owner.IsWellKnown(windows.WinBuiltinAdministratorsSid) {
		return false, nil
	}
	admins, err := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	if err != nil {
		return false, err
	}
	return token.IsMember(admins)
}

// checkReliableLocks refuses a directory on a remote drive (SMB shares,
// mapped drives): byte-range locks there are enforced by the server and lost
// when the connection drops.
func checkReliableLocks(_ *os.File, dir string) error {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return stateDirError("local state directory %s is not a valid path", dir)
	}
	buf := make([]uint16, windows.MAX_LONG_PATH)
	if err := windows.GetVolumePathName(p, &buf[0], uint32(len(buf))); err != nil {
		return stateDirErrorCause(err, "could not find the volume of %s: %s", dir, hold.OSErrorText(err))
	}
	if windows.GetDriveType(&buf[0]) == windows.DRIVE_REMOTE {
		return stateDirError("local state directory %s is on a network drive where file locks are not reliable; refusing it", dir)
	}
	return nil
}

// fileLinks is the open file's link count (GetFileInformationByHandle): 0
// once it was deleted. The ownership proof then compares this handle's file
// ID with the path's (os.SameFile, which uses the volume serial number and
// file index from GetFileInformationByHandle).
func fileLinks(f *os.File) (uint64, error) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &info); err != nil {
		return 0, err
	}
	return uint64(info.NumberOfLinks), nil
}

// entryRules: entries inherit the directory's access list, which
// checkStateDirOwnership judged; there is no per-entry owner to refuse.
type entryRules struct{ shared bool }

func entryRulesFor(_ fs.FileInfo, shared bool) entryRules { return entryRules{shared: shared} }

func (e entryRules) groupShared() bool { return e.shared }

func (entryRules) check(string, fs.FileInfo) error { return nil }

// Modes are meaningless on Windows: files inherit the directory's ACL.
func chmodCreated(*os.File, fs.FileMode) error { return nil }

func chmodCreatedDir(*os.Root, string, fs.FileMode) error { return nil }

// removeFile deletes the file rel of the store. os.Root.Remove deletes with
// FileDispositionInformationEx (POSIX semantics) and falls back to the classic
// disposition only when the file system answers STATUS_INVALID_INFO_CLASS,
// STATUS_INVALID_PARAMETER or STATUS_NOT_SUPPORTED. Drivers that answer
// STATUS_NOT_IMPLEMENTED or STATUS_INVALID_DEVICE_REQUEST instead, as Wine 8
// does for every file, fail it with ERROR_INVALID_FUNCTION, and a release
// could then never remove its holder record. There the file is deleted the
// classic way: a DELETE handle opened relative to its directory, itself
// opened through the root, so the deletion cannot leave the store either.
func (s *Store) removeFile(rel string) error {
	err := s.root.Remove(rel)
	if !errors.Is(err, windows.ERROR_INVALID_FUNCTION) {
		return err
	}
	fail := func(err error) error {
		var st windows.NTStatus
		if errors.As(err, &st) {
			err = st.Errno()
		}
		return &fs.PathError{Op: "remove", Path: rel, Err: err}
	}
	dir, err := s.root.Open(path.Dir(rel))
	if err != nil {
		return err
	}
	defer dir.Close()
	name, err := windows.NewNTUnicodeString(path.Base(rel))
	if err != nil {
		return fail(err)
	}
	oa := &windows.OBJECT_ATTRIBUTES{RootDirectory: windows.Handle(dir.Fd()), ObjectName: name}
	oa.Length = uint32(unsafe.Sizeof(*oa))
	var h windows.Handle
	// FILE_OPEN_REPARSE_POINT: a link at the name is deleted, not followed.
	if err := windows.NtCreateFile(&h, windows.DELETE|windows.SYNCHRONIZE, oa, &windows.IO_STATUS_BLOCK{}, nil, 0,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, windows.FILE_OPEN,
		windows.FILE_NON_DIRECTORY_FILE|windows.FILE_OPEN_REPARSE_POINT|windows.FILE_SYNCHRONOUS_IO_NONALERT, 0, 0); err != nil {
		return fail(err)
	}
	defer windows.CloseHandle(h)
	deleteFile := byte(1) // FILE_DISPOSITION_INFORMATION{DeleteFile: TRUE}
	if err := windows.NtSetInformationFile(h, &windows.IO_STATUS_BLOCK{}, &deleteFile, 1, windows.FileDispositionInformation); err != nil {
		return fail(err)
	}
	return nil
}

// replaceFile renames from over to. Windows refuses to replace a file that
// another handle has open (ERROR_ACCESS_DENIED or ERROR_SHARING_VIOLATION),
// and a status or watch reader holds the holder record open for the moment of
// one read; so a refusal is retried for a bounded while instead of failing the
// acquisition or renewal outright.
func (s *Store) replaceFile(from, to string) error {
	const tries, pause = 40, 5 * time.Millisecond
	var err error
	for range tries {
		if err = s.root.Rename(from, to); err == nil ||
			!(errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_SHARING_VIOLATION)) {
			return err
		}
		time.Sleep(pause)
	}
	return err
}
