package local

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
)

// The Windows side of the local authority's tests (run under Wine by `make
// test-windows`); the tests every OS shares are in local_shared_test.go.

// localDirVar names the directory the default ("local") state directory is
// made in: %LOCALAPPDATA%\octostore.
const localDirVar = "LOCALAPPDATA"

// The hold opens its lock file through os.Root, which shares delete access
// (FILE_SHARE_DELETE), so another process may delete it. Where the delete
// has POSIX semantics (DeleteFileW on NTFS in current Windows 10 and 11) the
// name goes at once, as on unix; with Win32 semantics (Wine 8; file systems
// without POSIX deletes) the file is only marked delete pending and keeps its
// name until its last handle closes. Renaming another file over it is
// refused with ERROR_ACCESS_DENIED while a handle has it open unless the
// rename has POSIX semantics (under Wine 8 it never has: both MoveFileEx and
// os.Root's FileRenameInformationEx are refused). The shared tests check
// whichever happens: measured under Wine, a deferred deletion and a refused
// replacement.
const (
	lockDeletionMayBeDeferred   = true
	lockReplacementMayBeRefused = true
)

// The default store is %LOCALAPPDATA%\octostore, created on first use with
// the elections and locks directories; XDG_RUNTIME_DIR and TMPDIR mean
// nothing on Windows.
func TestLocalDefaultDirectoryFromLocalAppData(t *testing.T) {
	appData := tempDir(t)
	s, err := Open(" local ", localEnv(map[string]string{"LOCALAPPDATA": appData, "XDG_RUNTIME_DIR": `C:\ignored`, "TMPDIR": `C:\ignored`}))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(appData, "octostore"), s.Dir())
	require.Equal(t, "local", s.Server())
	require.NoError(t, s.Close())
	for _, d := range []string{"", electionsDir, locksDir} {
		fi, err := os.Lstat(filepath.Join(appData, "octostore", d))
		require.NoError(t, err)
		require.True(t, fi.IsDir(), d)
	}
	// Opened again, the existing directory is accepted: it is this user's.
	s, err = Open("local", localEnv(map[string]string{"LOCALAPPDATA": appData}))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(appData, "octostore"), s.Dir())
	require.NoError(t, s.Close())
}

// Without an absolute LOCALAPPDATA there is no per-user directory to use:
// the refusal is a one-line usage error (64) that names the way out, and
// nothing is created (a relative value would land in the working directory).
func TestLocalDefaultDirectoryNeedsAbsoluteLocalAppData(t *testing.T) {
	cwd := tempDir(t)
	t.Chdir(cwd)
	for name, env := range map[string]map[string]string{
		"unset":                {"XDG_RUNTIME_DIR": cwd, "TMPDIR": cwd},
		"empty":                {"LOCALAPPDATA": ""},
		"relative":             {"LOCALAPPDATA": `appdata\local`},
		"drive-relative":       {"LOCALAPPDATA": `C:appdata`},
		"rooted without drive": {"LOCALAPPDATA": `\users\x\AppData\Local`},
	} {
		_, err := OpenPrivate(localEnv(env))
		requireLocalUsage(t, err, errStateDir, "LOCALAPPDATA is not set to an absolute path")
		require.Contains(t, err.Error(), "file:///C:/", name)
	}
	entries, err := os.ReadDir(cwd)
	require.NoError(t, err)
	require.Empty(t, entries, "a refused default created something in the working directory")
}

// A holder in another process killed with TerminateProcess (os.Process.Kill)
// cannot release anything; Windows drops its LockFileEx lock when the dying
// process's handles close, and a waiter in this process leads within one poll
// interval (plus generous slack for a loaded machine and Wine's server).
func TestLocalCrossProcessTerminateHandover(t *testing.T) {
	appData := tempDir(t)
	const poll = 100 * time.Millisecond
	child := startLocalChild(t, appData, "xproc", "child", poll)
	leader := child.expect(t, events.Leader)

	s := openStore(t, localEnv(map[string]string{"LOCALAPPDATA": appData}))
	st, err := s.status(hold.KindElection, "xproc")
	require.NoError(t, err)
	require.True(t, st.Held)
	require.Equal(t, child.cmd.Process.Pid, st.Holder.PID)
	require.Equal(t, "child", st.Holder.CandidateID)
	require.Equal(t, *leader.Term, st.Holder.Term)

	b := startLocalElection(t, s, "xproc", "parent", func(h *request) { h.poll = poll })
	b.expect(events.Waiting, hold.ReasonFollower)
	b.quiet(5 * poll) // excluded across processes

	// A handle of our own proves the child's end below without trusting a
	// pid that Windows may hand out again once the child is gone.
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(child.cmd.Process.Pid))
	require.NoError(t, err)
	defer windows.CloseHandle(h)

	require.NoError(t, child.cmd.Process.Kill())
	ps := child.exited(t)
	require.Equal(t, 1, ps.ExitCode(), "os.Process.Kill ends the child with TerminateProcess(1)")
	ev, err := windows.WaitForSingleObject(h, 0)
	require.NoError(t, err)
	require.Equal(t, uint32(windows.WAIT_OBJECT_0), ev, "the child process is still running")
	killed := time.Now()
	term, _ := b.authority()
	elapsed := time.Since(killed)
	t.Logf("hand-over after TerminateProcess took %v (poll interval %v)", elapsed, poll)
	require.Less(t, elapsed, poll+2*time.Second)
	require.Greater(t, term, *leader.Term)

	st, err = s.status(hold.KindElection, "xproc")
	require.NoError(t, err)
	require.Equal(t, os.Getpid(), st.Holder.PID)
	require.Equal(t, "parent", st.Holder.CandidateID)

	b.sigs <- os.Interrupt
	b.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, hold.ExitSIGINT, b.exit())
}

// removeFile deletes a store's file whether or not the file system takes
// os.Root's POSIX-semantics deletion (Wine 8 answers it ERROR_INVALID_FUNCTION,
// so there the classic fallback is what runs), and a missing file is
// fs.ErrNotExist, which a release treats as already removed.
func TestLocalRemoveFile(t *testing.T) {
	s, _ := newLocalStore(t)
	p := filepath.Join(s.Dir(), locksDir, "x.holder")
	require.NoError(t, os.WriteFile(p, []byte("{}"), 0o600))
	require.NoError(t, s.removeFile(locksDir+"/x.holder"))
	_, err := os.Lstat(p)
	require.ErrorIs(t, err, fs.ErrNotExist)
	err = s.removeFile(locksDir + "/x.holder")
	require.ErrorIs(t, err, fs.ErrNotExist)
	// A directory is not a file: refused, and left in place.
	require.NoError(t, os.Mkdir(filepath.Join(s.Dir(), locksDir, "d"), 0o700))
	require.Error(t, s.removeFile(locksDir+"/d"))
	fi, err := os.Lstat(filepath.Join(s.Dir(), locksDir, "d"))
	require.NoError(t, err)
	require.True(t, fi.IsDir())
}

// A reader holding the holder record open (status, watch) only delays a
// holder that rewrites it: Windows refuses to replace an open file, and the
// rewrite waits, bounded, until the reader closes it.
func TestLocalRecordRewriteWaitsForReader(t *testing.T) {
	s, err := Open("file://"+fileURLPath(tempDir(t)), nil)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.ensureSubdir(locksDir))
	p := pathsFor(hold.KindLock, "x")
	rec := holderRecord{Kind: "lock", Name: "x", Term: 1, PID: os.Getpid(), Holder: "a", AcquiredAt: time.Now(), ExpiresAt: time.Now()}
	require.NoError(t, s.writeRecord(p, rec))
	reader, err := s.root.Open(p.record)
	require.NoError(t, err)
	closed := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		reader.Close()
		close(closed)
	}()
	rec.Term = 2
	require.NoError(t, s.writeRecord(p, rec))
	<-closed
	got, err := s.readRecord(p.record)
	require.NoError(t, err)
	require.EqualValues(t, 2, got.Term)
}
