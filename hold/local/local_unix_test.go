//go:build unix

package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
	"github.com/octostore-supervisor/supervisor/platform/procid"
)

// The unix side of the local authority's tests; the tests every OS shares
// are in local_shared_test.go.

// localDirVar names the directory the default ("local") state directory is
// made in: $XDG_RUNTIME_DIR/octostore.
const localDirVar = "XDG_RUNTIME_DIR"

// On unix unlink and rename act on names at once, whatever has the file
// open: a deleted or replaced lock file is always noticed as such.
const (
	lockDeletionMayBeDeferred   = false
	lockReplacementMayBeRefused = false
)

func TestLocalUnsafeStateDirRefused(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		require.NoError(t, os.Mkdir(p, 0o700))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	fileURL := func(p string) string { return "file://" + p }
	good := mk("good", 0o700)

	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(good, link))
	requireLocalUsage(t, openBad(t, fileURL(link)), errStateDir, "is a symbolic link")

	xdg := mk("xdg", 0o700)
	require.NoError(t, os.Symlink(good, filepath.Join(xdg, "octostore")))
	_, err := OpenPrivate(localEnv(map[string]string{"XDG_RUNTIME_DIR": xdg}))
	requireLocalUsage(t, err, errStateDir, "is a symbolic link")

	requireLocalUsage(t, openBad(t, fileURL(mk("world", 0o777))), errStateDir, "world-writable without the sticky bit")
	notDir := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	requireLocalUsage(t, openBad(t, fileURL(notDir)), errStateDir, "is not a directory")

	// A shared directory may be group-writable, sticky world-writable, or
	// belong to someone else.
	for _, p := range []string{mk("group", 0o770), mk("sticky", 0o777|os.ModeSticky)} {
		require.NoError(t, openBad(t, fileURL(p)))
	}

	// The private default must be ours and writable by nobody else.
	for _, mode := range []os.FileMode{0o777, 0o770, 0o720, 0o702} {
		x := mk(fmt.Sprintf("xdg-%o", mode), 0o700)
		require.NoError(t, os.Mkdir(filepath.Join(x, "octostore"), 0o700))
		require.NoError(t, os.Chmod(filepath.Join(x, "octostore"), mode))
		_, err := OpenPrivate(localEnv(map[string]string{"XDG_RUNTIME_DIR": x}))
		requireLocalUsage(t, err, errStateDir, "is writable by other users")
	}

	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root; the ownership refusal is not exercised")
	}
	const nobody = 65534
	other := mk("xdg-other", 0o700)
	require.NoError(t, os.Mkdir(filepath.Join(other, "octostore"), 0o700))
	require.NoError(t, os.Chown(filepath.Join(other, "octostore"), nobody, nobody))
	_, err = OpenPrivate(localEnv(map[string]string{"XDG_RUNTIME_DIR": other}))
	requireLocalUsage(t, err, errStateDir, "is owned by another user (uid 65534)")
	// Without XDG_RUNTIME_DIR the default lives in TMPDIR, where another user
	// could have planted it first.
	tmp := mk("tmp", 0o777|os.ModeSticky)
	planted := filepath.Join(tmp, fmt.Sprintf("octostore-%d", os.Geteuid()))
	require.NoError(t, os.Mkdir(planted, 0o700))
	require.NoError(t, os.Chown(planted, nobody, nobody))
	_, err = OpenPrivate(localEnv(map[string]string{"TMPDIR": tmp}))
	requireLocalUsage(t, err, errStateDir, "is owned by another user")
	// With file:// sharing another owner is fine.
	shared := mk("shared-other", 0o770)
	require.NoError(t, os.Chown(shared, nobody, nobody))
	require.NoError(t, openBad(t, fileURL(shared)))
}

func TestLocalDefaultDirectory(t *testing.T) {
	xdg := t.TempDir()
	s, err := Open(" local ", localEnv(map[string]string{"XDG_RUNTIME_DIR": xdg, "TMPDIR": "/nonexistent"}))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(xdg, "octostore"), s.Dir())
	require.Equal(t, "local", s.Server())
	require.NoError(t, s.Close())
	fi, err := os.Stat(filepath.Join(xdg, "octostore"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	tmp := t.TempDir()
	s, err = Open("local", localEnv(map[string]string{"XDG_RUNTIME_DIR": "relative/ignored", "TMPDIR": tmp}))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(tmp, fmt.Sprintf("octostore-%d", os.Geteuid())), s.Dir())
	require.NoError(t, s.Close())
}

// reaped waits for the child's exit status: once Wait has returned the
// process is gone, not even a zombie.
func (c *localChild) reaped(t *testing.T) syscall.WaitStatus {
	t.Helper()
	return c.exited(t).Sys().(syscall.WaitStatus)
}

// A holder killed with SIGKILL cannot release anything; the kernel drops its
// flock, and a waiter in another process leads within one poll interval.
func TestLocalCrossProcessSIGKILLHandover(t *testing.T) {
	xdg := t.TempDir()
	const poll = 100 * time.Millisecond
	child := startLocalChild(t, xdg, "xproc", "child", poll)
	leader := child.expect(t, events.Leader)

	s := openStore(t, localEnv(map[string]string{"XDG_RUNTIME_DIR": xdg}))
	st, err := s.status(hold.KindElection, "xproc")
	require.NoError(t, err)
	require.Equal(t, child.cmd.Process.Pid, st.Holder.PID)
	require.Equal(t, "child", st.Holder.CandidateID)

	b := startLocalElection(t, s, "xproc", "parent", func(h *request) { h.poll = poll })
	b.expect(events.Waiting, hold.ReasonFollower)
	b.quiet(5 * poll) // excluded across processes

	require.NoError(t, child.cmd.Process.Signal(syscall.SIGKILL))
	ws := child.reaped(t)
	require.True(t, ws.Signaled())
	require.Equal(t, syscall.SIGKILL, ws.Signal())
	killed := time.Now()
	term, _ := b.authority()
	elapsed := time.Since(killed)
	t.Logf("hand-over after SIGKILL took %v (poll interval %v)", elapsed, poll)
	require.Less(t, elapsed, poll+2*time.Second)
	require.Greater(t, term, *leader.Term)

	b.sigs <- syscall.SIGTERM
	b.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, hold.ExitSIGTERM, b.exit())
}

// The other direction: the parent leads, a child process waits and takes
// over after the parent's release; SIGTERM then releases the child (143).
func TestLocalCrossProcessReleaseHandover(t *testing.T) {
	xdg := t.TempDir()
	s := openStore(t, localEnv(map[string]string{"XDG_RUNTIME_DIR": xdg}))
	a := startLocalElection(t, s, "xproc2", "parent")
	termA, _ := a.authority()

	child := startLocalChild(t, xdg, "xproc2", "child", testPoll)
	child.expect(t, events.Waiting)
	select {
	case line := <-child.lines:
		t.Fatalf("child printed %s while the parent leads", line)
	case <-time.After(10 * testPoll):
	}
	a.sigs <- syscall.SIGINT
	a.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, hold.ExitSIGINT, a.exit())
	lead := child.expect(t, events.Leader)
	require.Greater(t, *lead.Term, termA)

	require.NoError(t, child.cmd.Process.Signal(syscall.SIGTERM))
	rel := child.expect(t, events.Released)
	require.Equal(t, *lead.Term, *rel.Term)
	ws := child.reaped(t)
	require.True(t, ws.Exited())
	require.Equal(t, hold.ExitSIGTERM, ws.ExitStatus())
	st, err := s.status(hold.KindElection, "xproc2")
	require.NoError(t, err)
	require.False(t, st.Held)
}

// Issue 11 item 10: the record of a holder that died names a dead process, so
// a hand-over is not deferred until its lease expires — also when the dead
// holder is a zombie its (slow) parent has not reaped, or its pid now names
// another process. A live holder still defers (the lock-file-replaced case).
func TestLocalDeadHolderRecordDoesNotDelayHandover(t *testing.T) {
	s, _ := newLocalStore(t)
	child := exec.Command("true")
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Wait() })
	var zombie platform.Proc
	proctest.WaitFor(t, 10*time.Second, "the child to become a zombie", func() bool {
		var err error
		zombie, err = platform.NewProcReader().Stat(child.Process.Pid)
		return err == nil && zombie.State == 'Z'
	})
	me, err := procid.Self()
	require.NoError(t, err)

	for _, c := range []struct {
		room   string
		holder procid.ID
		defers bool
	}{
		{"zombie", procid.ID{Pid: zombie.Pid, Start: zombie.StartTicks}, false},
		{"zombie-old-record", procid.ID{Pid: zombie.Pid}, false},
		{"reused-pid", procid.ID{Pid: me.Pid, Start: me.Start + 1}, false},
		{"live", me, true},
	} {
		t.Run(c.room, func(t *testing.T) {
			now := time.Now()
			cand := "dead-holder"
			require.NoError(t, s.writeRecord(pathsFor(hold.KindElection, c.room), holderRecord{
				Kind: "election", Name: c.room, CandidateID: &cand, PID: c.holder.Pid, Start: c.holder.Start,
				Holder: "planted", AcquiredAt: now, ExpiresAt: now.Add(time.Hour),
			}))
			h := startLocalElection(t, s, c.room, "agent-b")
			if c.defers {
				h.expect(events.Waiting, hold.ReasonFollower)
				h.quiet(5 * testPoll)
			} else {
				ev, m := h.next(10 * time.Second)
				require.Equal(t, events.Leader, ev.Event, "a dead holder's record deferred the hand-over: %v", m)
			}
			h.sigs <- os.Interrupt
			if !c.defers {
				h.expect(events.Released, hold.ReasonSignal)
			}
			h.exit()
		})
	}
}

// Issue 10 item 6: entries of a shared file:/// directory that another user
// planted, or that others may write, are refused with a usage error (64)
// naming the path. Only a setgid, group-writable, not world-writable
// directory shares its entries with its group.
func TestLocalPlantedEntriesRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting entries as another user needs root (CI runs as root)")
	}
	const nobody = 65534
	mkdir := func(t *testing.T, mode os.FileMode) string {
		d := filepath.Join(t.TempDir(), "store")
		require.NoError(t, os.Mkdir(d, 0o700))
		require.NoError(t, os.Chmod(d, mode))
		return d
	}
	plant := func(t *testing.T, path string, dir bool, mode os.FileMode, uid, gid int) {
		if dir {
			require.NoError(t, os.MkdirAll(path, 0o700))
		} else {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			require.NoError(t, os.WriteFile(path, nil, 0o600))
		}
		require.NoError(t, os.Chmod(path, mode))
		require.NoError(t, os.Chown(path, uid, gid))
	}
	shared := 0o770 | os.ModeSetgid
	for _, c := range []struct {
		name     string
		dirMode  os.FileMode
		entry    string
		isDir    bool
		mode     os.FileMode
		uid, gid int
		want     string // "" = accepted
	}{
		{"world-writable elections in a group-shared dir", shared, "elections", true, 0o777, nobody, 0, "writable by every user"},
		{"world-writable term in a group-shared dir", shared, "term", false, 0o666, nobody, 0, "writable by every user"},
		{"another group's writable lock file", shared, "locks/x.lock", false, 0o660, nobody, nobody, "not by the state directory's group"},
		{"a member's term in a group-shared dir", shared, "term", false, 0o660, nobody, 0, ""},
		{"another user's term in a private dir", 0o700, "term", false, 0o600, nobody, nobody, "owned by another user (uid 65534)"},
		{"another user's elections in a group dir without setgid", 0o770, "elections", true, 0o770, nobody, 0, "owned by another user"},
		{"another user's elections in a sticky world-writable dir", 0o777 | os.ModeSticky, "elections", true, 0o700, nobody, nobody, "owned by another user"},
		{"our own group-writable locks in a private dir", 0o700, "locks", true, 0o770, 0, 0, "writable by its group"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := mkdir(t, c.dirMode)
			p := filepath.Join(d, filepath.FromSlash(c.entry))
			plant(t, p, c.isDir, c.mode, c.uid, c.gid)
			s, err := Open("file://"+d, nil)
			if err == nil {
				// Per-name entries are judged before a hold uses them.
				err = s.CheckName(hold.KindLock, "x")
				s.Close()
			}
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			requireLocalUsage(t, err, errStateDir, c.want)
			require.Contains(t, err.Error(), p)
		})
	}

	// A hold on a name whose lock file was planted exits 64 before acquiring.
	d := mkdir(t, 0o700)
	s, err := Open("file://"+d, nil)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	planted := filepath.Join(d, "elections", "room.lock")
	plant(t, planted, false, 0o600, nobody, nobody)
	h := startLocalElection(t, s, "room", "agent-a")
	require.Equal(t, hold.ExitUsage, h.exit())
	require.Contains(t, h.diag.String(), planted)
}
