//go:build linux

package hold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestLoadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	good := write("good", "  secret-token \n", 0o600)
	readOnly := write("readonly", "ro-token", 0o400)
	groupRead := write("group", "t", 0o640)
	otherRead := write("other", "t", 0o604)
	groupExec := write("gexec", "t", 0o610)
	empty := write("empty", "", 0o600)
	blank := write("blank", " \t\r\n", 0o600)
	twoLines := write("two", "line1\nline2\n", 0o600)
	notUTF8 := write("bin", "tok\xfe", 0o600)
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(good, link))
	subdir := filepath.Join(dir, "subdir")
	require.NoError(t, os.Mkdir(subdir, 0o700))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	linkToDirParent := filepath.Join(dir, "dirlink")
	require.NoError(t, os.Symlink(dir, linkToDirParent))

	cases := []struct {
		name string
		path string
		want string
		err  string
	}{
		{"regular 0600", good, "secret-token", ""},
		{"regular 0400", readOnly, "ro-token", ""},
		{"symlink in a parent is followed", filepath.Join(linkToDirParent, "good"), "secret-token", ""},
		{"symlink final component", link, "", "could not open OCTOSTORE_TOKEN_FILE safely: Too many levels of symbolic links (os error 40)"},
		{"missing", filepath.Join(dir, "missing"), "", "could not open OCTOSTORE_TOKEN_FILE safely: No such file or directory (os error 2)"},
		{"directory", subdir, "", "OCTOSTORE_TOKEN_FILE must be a regular file"},
		{"fifo", fifo, "", "OCTOSTORE_TOKEN_FILE must be a regular file"},
		{"device", "/dev/null", "", "OCTOSTORE_TOKEN_FILE must be a regular file"},
		{"group readable", groupRead, "", "OCTOSTORE_TOKEN_FILE must have owner-only permissions (chmod 600)"},
		{"other readable", otherRead, "", "OCTOSTORE_TOKEN_FILE must have owner-only permissions (chmod 600)"},
		{"group exec bit", groupExec, "", "OCTOSTORE_TOKEN_FILE must have owner-only permissions (chmod 600)"},
		{"empty", empty, "", "bearer token is empty"},
		{"blank", blank, "", "bearer token is empty"},
		{"two lines", twoLines, "", "bearer token must be one line"},
		{"not utf8", notUTF8, "", "could not read OCTOSTORE_TOKEN_FILE: stream did not contain valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := envOf(map[string]string{"OCTOSTORE_TOKEN_FILE": tc.path, "OCTOSTORE_TOKEN": "env-token"})
			tok, warn, err := LoadToken(env, strings.NewReader("stdin-token"))
			require.Empty(t, warn)
			if tc.err != "" {
				requireUsage(t, err, ErrToken, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, tok)
		})
	}
}

func TestLoadTokenFileOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	p := filepath.Join(t.TempDir(), "foreign")
	require.NoError(t, os.WriteFile(p, []byte("tok"), 0o600))
	require.NoError(t, os.Chown(p, 65534, 65534))
	_, _, err := LoadToken(envOf(map[string]string{"OCTOSTORE_TOKEN_FILE": p}), strings.NewReader(""))
	requireUsage(t, err, ErrToken, "OCTOSTORE_TOKEN_FILE must be owned by the current user")
}

func TestLoadTokenFileChecksOrder(t *testing.T) {
	// Owner is checked before mode: a foreign, group-readable file reports the
	// owner problem, as upstream.
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	p := filepath.Join(t.TempDir(), "foreign")
	require.NoError(t, os.WriteFile(p, []byte("tok"), 0o600))
	require.NoError(t, os.Chmod(p, 0o644))
	require.NoError(t, os.Chown(p, 65534, 65534))
	_, _, err := LoadToken(envOf(map[string]string{"OCTOSTORE_TOKEN_FILE": p}), strings.NewReader(""))
	requireUsage(t, err, ErrToken, "OCTOSTORE_TOKEN_FILE must be owned by the current user")
}

// ReadSecretFile gives any secret file the token file's checks, and every
// error names the variable that named the file, not OCTOSTORE_TOKEN_FILE.
func TestReadSecretFileNamesItsVariable(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(key, []byte("KEYMATERIAL\n"), 0o600))
	require.NoError(t, os.Chmod(key, 0o640))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(key, link))

	for _, tc := range []struct{ path, says string }{
		{key, "OCTOSTORE_ETCD_KEY must have owner-only permissions (chmod 600)"},
		{link, "could not open OCTOSTORE_ETCD_KEY safely: "},
		{dir, "OCTOSTORE_ETCD_KEY must be a regular file"},
	} {
		_, err := ReadSecretFile(tc.path, "OCTOSTORE_ETCD_KEY")
		require.ErrorIs(t, err, ErrToken, tc.path)
		require.ErrorContains(t, err, tc.says, tc.path)
		require.NotContains(t, err.Error(), "OCTOSTORE_TOKEN_FILE", tc.path)
		require.NotContains(t, err.Error(), "KEYMATERIAL", tc.path)
	}

	require.NoError(t, os.Chmod(key, 0o600))
	got, err := ReadSecretFile(key, "OCTOSTORE_ETCD_KEY")
	require.NoError(t, err)
	require.Equal(t, "KEYMATERIAL\n", got)
}
