//go:build windows

package hold

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// readSecretFile on Windows checks as much as Windows allows, all on the opened
// handle, not on the path, so nothing can be swapped in between: a regular
// file, not a reparse point (symlink or junction) at the final component (the
// handle is opened with FILE_FLAG_OPEN_REPARSE_POINT so it describes the link
// itself), owned by the current user, and an ACL that lets no one else read it
// (tokenACLProblem) - the counterpart of the Unix owner and chmod 600 checks.
func readSecretFile(path, name string) (string, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not open "+name+": "+err.Error(), err)
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, windows.FILE_SHARE_READ, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not open "+name+": "+osErrorText(err), err)
	}
	f := os.NewFile(uintptr(h), path)
	defer f.Close()
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return "", usageErrorCause(ErrToken, "could not inspect "+name+": "+osErrorText(err), err)
	}
	const notRegular = windows.FILE_ATTRIBUTE_DIRECTORY | windows.FILE_ATTRIBUTE_REPARSE_POINT | windows.FILE_ATTRIBUTE_DEVICE
	if info.FileAttributes&notRegular != 0 {
		return "", usageError(ErrToken, name+" must be a regular file")
	}
	if msg := tokenACLProblem(h, name); msg != "" {
		return "", usageError(ErrToken, msg)
	}
	raw, err := readAllUTF8(f)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not read "+name+": "+ioErrorText(err), err)
	}
	return raw, nil
}

// readRights are the access rights that read a file's data or let their
// holder grant itself that (by rewriting the DACL or taking ownership).
const readRights = windows.FILE_READ_DATA | windows.GENERIC_READ | windows.GENERIC_ALL |
	windows.WRITE_DAC | windows.WRITE_OWNER

// tokenACLProblem returns why the secret file's security descriptor lets
// someone other than the current user read it, or "" when it does not. Local
// System and the Administrators group are accepted as owner and as readers:
// they can read every file whatever its ACL says (backup privilege, taking
// ownership), as root can on Unix, and Windows puts them on a user's files by
// default. A missing (NULL) DACL grants everyone everything; an allow entry of
// a kind this check does not know is refused rather than guessed at.
func tokenACLProblem(h windows.Handle, name string) string {
	prefix := name + " "
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return prefix + "security could not be read: " + osErrorText(err)
	}
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return prefix + "check: the current user is unknown: " + osErrorText(err)
	}
	me := user.User.Sid
	trusted := func(sid *windows.SID) bool {
		return sid.Equals(me) || sid.IsWellKnown(windows.WinLocalSystemSid) || sid.IsWellKnown(windows.WinBuiltinAdministratorsSid)
	}
	owner, _, err := sd.Owner()
	if err != nil || owner == nil {
		return prefix + "has no owner"
	}
	if !trusted(owner) {
		return prefix + "must be owned by the current user"
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil {
		return prefix + "must have an ACL readable only by the current user (it has none, so everyone may read it)"
	}
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return prefix + "ACL could not be read: " + osErrorText(err)
		}
		if ace.Header.AceFlags&windows.INHERIT_ONLY_ACE != 0 {
			continue // applies to children of a directory, never to this file
		}
		switch ace.Header.AceType {
		case windows.ACCESS_DENIED_ACE_TYPE:
			continue // only ever takes rights away
		case windows.ACCESS_ALLOWED_ACE_TYPE:
		default:
			return fmt.Sprintf("%smust have an ACL readable only by the current user (entry %d is of a kind this check does not know: type %d)", prefix, i, ace.Header.AceType)
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if uint32(ace.Mask)&readRights != 0 && !trusted(sid) {
			return fmt.Sprintf("%smust have an ACL readable only by the current user (it grants %s read access; icacls FILE /inheritance:r /grant:r %%USERNAME%%:R)", prefix, sidName(sid))
		}
	}
	return ""
}

// sidName is the account name of sid where Windows can look it up, else its
// S-1-... form.
func sidName(sid *windows.SID) string {
	account, domain, _, err := sid.LookupAccount("")
	if err != nil || account == "" {
		return sid.String()
	}
	if domain != "" {
		return domain + "\\" + account
	}
	return account
}
