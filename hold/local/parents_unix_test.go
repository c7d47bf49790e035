//go:build unix

package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
)

// With XDG_RUNTIME_DIR unset, root's private state (the fencing counter, the
// survivor records, the interlocks) lived under $TMPDIR: where another user
// may write there and it is not sticky, nobody renamed it away and the next
// leader got term 1 again after 3 (issue 32, finding 3). The attack as it
// was done; root's state below such a directory is now refused, naming it.
func TestRootStateRenamedAwayByAnotherUser(t *testing.T) {
	requireRoot(t)
	shared := openToNobody(t, "shared", 0o777)
	env := localEnv(map[string]string{"TMPDIR": shared})
	s, err := OpenPrivate(env)
	if err == nil {
		var terms []uint64
		for range 3 {
			terms = append(terms, leadOnce(t, s))
		}
		require.NoError(t, s.Close())
		asNobody(t, "/bin/mv", filepath.Join(shared, "octostore-0"), filepath.Join(shared, "gone"))
		again := leadOnce(t, openStore(t, env))
		t.Fatalf("nobody renamed root's state in %s (mode 0777) away: term %d after %v", shared, again, terms)
	}
	requireLocalUsage(t, err, errStateDir, "local state directory "+shared+"/octostore-0 is below "+shared+", which other users may write to (mode 0777)")
}

// Every directory on the way to root's private state must be root's and
// writable by root alone, or sticky; every symlink on the way root's.
func TestRootStateParentsChecked(t *testing.T) {
	requireRoot(t)
	sticky := openToNobody(t, "sticky", 0o777|os.ModeSticky)
	groupW := openToNobody(t, "group", 0o770)
	theirs := openToNobody(t, "theirs", 0o700)
	require.NoError(t, os.Chown(theirs, nobody, nobody))
	stickyBelowOpen := filepath.Join(openToNobody(t, "open", 0o777), "sticky")
	require.NoError(t, os.Mkdir(stickyBelowOpen, 0o700))
	require.NoError(t, os.Chmod(stickyBelowOpen, 0o777|os.ModeSticky))
	theirLink := filepath.Join(sticky, "link")
	require.NoError(t, os.Symlink(openToNobody(t, "private", 0o700), theirLink))
	require.NoError(t, os.Lchown(theirLink, nobody, nobody))
	rootLink := filepath.Join(filepath.Dir(sticky), "rootlink")
	require.NoError(t, os.Symlink("sticky", rootLink))

	for dir, want := range map[string]string{
		groupW:          "which other users may write to (mode 0770)",
		theirs:          "which belongs to uid 65534",
		stickyBelowOpen: "which other users may write to (mode 0777)",
		theirLink:       "is below " + theirLink + ", which belongs to uid 65534",
	} {
		_, err := OpenPrivate(localEnv(map[string]string{"TMPDIR": dir}))
		requireLocalUsage(t, err, errStateDir, want)
	}
	// A sticky directory below ones that check out is fine (as /tmp is),
	// also through a symlink of root's.
	for _, dir := range []string{sticky, rootLink} {
		s := openStore(t, localEnv(map[string]string{"TMPDIR": dir}))
		require.Equal(t, filepath.Join(dir, "octostore-0"), s.Dir())
	}
}

const nobody = 65534

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("root's state directory: make test runs this as root")
	}
}

// openToNobody makes a directory named name with mode in a test directory
// nobody may pass through.
func openToNobody(t *testing.T, name string, mode os.FileMode) string {
	t.Helper()
	base := tempDir(t)
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o711))
	require.NoError(t, os.Chmod(base, 0o711))
	p := filepath.Join(base, name)
	require.NoError(t, os.Mkdir(p, 0o700))
	require.NoError(t, os.Chmod(p, mode))
	return p
}

// leadOnce leads room once and releases it, returning the term.
func leadOnce(t *testing.T, s *Store) uint64 {
	t.Helper()
	h := startLocalElection(t, s, "room", "agent")
	term, _ := h.authority()
	h.sigs <- syscall.SIGTERM
	h.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, hold.ExitSIGTERM, h.exit())
	return term
}

// asNobody runs argv as nobody, as another local user would.
func asNobody(t *testing.T, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}
