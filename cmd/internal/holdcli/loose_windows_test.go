package holdcli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// looseTokenRefusal is how a token file others may read is refused: an ACL
// check, where Unix checks the mode.
const looseTokenRefusal = "OCTOSTORE_TOKEN_FILE must have an ACL readable only by the current user (it grants "

// looseTokenFile writes a token file that Everyone may read. Windows keeps
// the ACL set here (a new file in a profile directory would inherit one that
// Everyone cannot read); Wine 8 ignores it and makes every file's ACL up from
// its Unix mode, which lets Everyone read a new file (see hold's
// TestLoadTokenFileWineDefaultACL), so the file is loose on both. t.TempDir is
// not used: its RemoveAll cleanup fails under Wine 8 ("Invalid function"),
// while os.Remove works.
func looseTokenFile(t *testing.T) string {
	dir, err := os.MkdirTemp("", "holdcli-token-")
	require.NoError(t, err)
	p := filepath.Join(dir, "token")
	t.Cleanup(func() {
		_ = os.Remove(p)
		require.NoError(t, os.Remove(dir))
	})
	require.NoError(t, os.WriteFile(p, []byte("tok\n"), 0o600))

	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	require.NoError(t, err)
	everyone, err := windows.CreateWellKnownSid(windows.WinWorldSid)
	require.NoError(t, err)
	grant := func(sid *windows.SID, mask windows.ACCESS_MASK) windows.EXPLICIT_ACCESS {
		return windows.EXPLICIT_ACCESS{AccessPermissions: mask, AccessMode: windows.GRANT_ACCESS, Inheritance: windows.NO_INHERITANCE,
			Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeValue: windows.TrusteeValueFromSID(sid)}}
	}
	acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{
		grant(user.User.Sid, windows.GENERIC_ALL),
		grant(everyone, windows.GENERIC_READ),
	}, nil)
	require.NoError(t, err)
	require.NoError(t, windows.SetNamedSecurityInfo(p, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION,
		user.User.Sid, nil, acl, nil))
	return p
}
