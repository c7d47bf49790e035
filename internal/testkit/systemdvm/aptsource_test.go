package systemdvm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeApt(t *testing.T, files map[string]string) string {
	t.Helper()
	etc := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(etc, "sources.list.d"), 0o755))
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(etc, name), []byte(text), 0o644))
	}
	return etc
}

func TestAptSourceDeb822(t *testing.T) {
	etc := writeApt(t, map[string]string{
		"sources.list.d/other.sources.disabled": "Types: deb\nURIs: http://wrong.invalid/\nSuites: bookworm\nComponents: main\n",
		"sources.list.d/debian.sources": "Types: deb\n# a comment\nURIs: http://security.invalid/debian-security\nSuites: bookworm-security\nComponents: main\n\n" +
			"Types: deb deb-src\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\nComponents: main contrib\n" +
			"Signed-By: /nonexistent/keyring.gpg\n",
	})
	src, err := aptSourceIn(etc, "bookworm")
	require.NoError(t, err)
	require.Equal(t, "http://mirror.invalid/debian", src.URI)
	require.Empty(t, src.Keyring, "a Signed-By file that does not exist is not passed on")
}

func TestAptSourceOneLine(t *testing.T) {
	key := filepath.Join(t.TempDir(), "k.gpg")
	require.NoError(t, os.WriteFile(key, nil, 0o644))
	etc := writeApt(t, map[string]string{
		"sources.list": "# deb http://commented.invalid/debian bookworm main\n" +
			"deb-src http://src.invalid/debian bookworm main\n" +
			"deb cdrom:[Debian]/ bookworm main\n" +
			"deb [arch=amd64 signed-by=" + key + "] https://mirror.invalid/debian bookworm contrib main # trailing\n",
	})
	src, err := aptSourceIn(etc, "bookworm")
	require.NoError(t, err)
	require.Equal(t, "https://mirror.invalid/debian", src.URI)
	require.Equal(t, key, src.Keyring)
}

func TestAptSourceNone(t *testing.T) {
	etc := writeApt(t, map[string]string{
		"sources.list.d/x.list":    "deb http://mirror.invalid/debian trixie main\n",
		"sources.list.d/y.sources": "Enabled: no\nTypes: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm\nComponents: main\n",
	})
	_, err := aptSourceIn(etc, "bookworm")
	require.ErrorContains(t, err, "no deb entry for bookworm main")
}

// A release apt has no entry for is fetched from the host release's mirror,
// named by os-release.
func TestHostCodename(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "os-release")
	require.NoError(t, os.WriteFile(p, []byte("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\n"), 0o644))
	got, err := hostCodename(p)
	require.NoError(t, err)
	require.Equal(t, "bookworm", got)

	require.NoError(t, os.WriteFile(p, []byte("ID=debian\n"), 0o644))
	_, err = hostCodename(p)
	require.ErrorContains(t, err, "no VERSION_CODENAME")
}
