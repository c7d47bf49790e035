package hold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/platform"
)

// setACL replaces path's owner and DACL (protected: nothing inherited).
// dacl nil sets a NULL DACL, which grants everyone everything.
func setACL(t *testing.T, path string, dacl *windows.ACL) {
	t.Helper()
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	require.NoError(t, err)
	require.NoError(t, windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION,
		user.User.Sid, nil, dacl, nil))
}

// allow builds a DACL with one allow entry per (sid, mask).
func allow(t *testing.T, entries ...windows.EXPLICIT_ACCESS) *windows.ACL {
	t.Helper()
	acl, err := windows.ACLFromEntries(entries, nil)
	require.NoError(t, err)
	return acl
}

func grant(sid *windows.SID, mask windows.ACCESS_MASK) windows.EXPLICIT_ACCESS {
	return windows.EXPLICIT_ACCESS{AccessPermissions: mask, AccessMode: windows.GRANT_ACCESS, Inheritance: windows.NO_INHERITANCE,
		Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeValue: windows.TrusteeValueFromSID(sid)}}
}

func TestLoadTokenFileWindowsACL(t *testing.T) {
	dir, err := os.MkdirTemp("", "octostore-token-")
	require.NoError(t, err)
	var made []string
	t.Cleanup(func() {
		// os.Remove, not RemoveAll: Go 1.26's RemoveAll uses a call Wine 8
		// does not implement.
		for i := len(made) - 1; i >= 0; i-- {
			_ = os.Remove(made[i])
		}
		_ = os.Remove(dir)
	})
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		made = append(made, p)
		return p
	}
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	require.NoError(t, err)
	me := user.User.Sid
	everyone, err := windows.CreateWellKnownSid(windows.WinWorldSid)
	require.NoError(t, err)
	users, err := windows.CreateWellKnownSid(windows.WinBuiltinUsersSid)
	require.NoError(t, err)
	admins, err := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	require.NoError(t, err)

	own := write("own", "  secret-token \r\n")
	setACL(t, own, allow(t, grant(me, windows.GENERIC_ALL)))
	// Whether the kernel keeps a file's ACL at all is what this test needs:
	// read back what was just set before trusting any verdict on it.
	sd, err := windows.GetNamedSecurityInfo(own, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	require.NoError(t, err)
	dacl, _, err := sd.DACL()
	require.NoError(t, err)
	if dacl == nil || dacl.AceCount != 1 {
		v, wine := platform.WineVersion()
		require.True(t, wine, "Windows did not keep the ACL set on a file")
		t.Skipf("Wine %s does not keep an ACL set on a file (SetNamedSecurityInfo succeeds, but what reads back is still the descriptor made from the Unix mode), so no verdict on a chosen ACL can be tested; TestLoadTokenFileWineDefaultACL covers the one Wine has", v)
	}
	withAdmins := write("admins", "tok")
	setACL(t, withAdmins, allow(t, grant(me, windows.GENERIC_READ), grant(admins, windows.GENERIC_ALL)))
	world := write("world", "tok")
	setACL(t, world, allow(t, grant(me, windows.GENERIC_ALL), grant(everyone, windows.GENERIC_READ)))
	usersRead := write("users", "tok")
	setACL(t, usersRead, allow(t, grant(me, windows.GENERIC_ALL), grant(users, windows.FILE_READ_DATA)))
	usersDAC := write("usersdac", "tok")
	setACL(t, usersDAC, allow(t, grant(me, windows.GENERIC_ALL), grant(users, windows.WRITE_DAC)))
	usersAttrs := write("usersattrs", "tok")
	setACL(t, usersAttrs, allow(t, grant(me, windows.GENERIC_ALL), grant(users, windows.FILE_READ_ATTRIBUTES|windows.READ_CONTROL)))
	null := write("null", "tok")
	setACL(t, null, nil)
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o700))
	made = append(made, sub)

	for _, tc := range []struct {
		name, path, want, err string
	}{
		{"owner only", own, "secret-token", ""},
		{"owner and administrators", withAdmins, "tok", ""},
		{"others may see attributes only", usersAttrs, "tok", ""},
		{"everyone reads", world, "", "OCTOSTORE_TOKEN_FILE must have an ACL readable only by the current user (it grants "},
		{"users read", usersRead, "", "OCTOSTORE_TOKEN_FILE must have an ACL readable only by the current user (it grants "},
		{"users may rewrite the ACL", usersDAC, "", "OCTOSTORE_TOKEN_FILE must have an ACL readable only by the current user (it grants "},
		{"null DACL", null, "", "OCTOSTORE_TOKEN_FILE must have an ACL readable only by the current user (it has none, so everyone may read it)"},
		{"directory", sub, "", "OCTOSTORE_TOKEN_FILE must be a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := envOf(map[string]string{"OCTOSTORE_TOKEN_FILE": tc.path})
			tok, _, err := LoadToken(env, strings.NewReader(""))
			if tc.err != "" {
				require.ErrorIs(t, err, ErrToken)
				require.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, tok)
		})
	}
}

// Under Wine a file's security descriptor is made up from its Unix mode bits,
// and a new file is readable by others there (Everyone gets read access): the
// token file check must refuse it, as the Unix check refuses a 0644 file.
func TestLoadTokenFileWineDefaultACL(t *testing.T) {
	v, wine := platform.WineVersion()
	if !wine {
		t.Skip("on Windows a new file's ACL is inherited from its directory, so no fixed verdict exists; TestLoadTokenFileWindowsACL sets explicit ACLs there")
	}
	f, err := os.CreateTemp("", "octostore-token-")
	require.NoError(t, err)
	_, err = f.WriteString("tok")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	t.Cleanup(func() { _ = os.Remove(f.Name()) })
	_, _, err = LoadToken(envOf(map[string]string{"OCTOSTORE_TOKEN_FILE": f.Name()}), strings.NewReader(""))
	require.ErrorIs(t, err, ErrToken, "Wine %s", v)
	require.Contains(t, err.Error(), "OCTOSTORE_TOKEN_FILE must have an ACL readable only by the current user (it grants Everyone read access")
}
