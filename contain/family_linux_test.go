package contain

// Tests of the macOS backend's Unix-shared logic: process families, the leader-
// keeping reaper and the run name parsing. They run here on Linux, where the
// test binary is a child subreaper (TestMain): an orphan re-parents to the
// test process, which is outside the family's root, so it leaves the root's
// parent chain exactly as an orphan that re-parents to launchd does on macOS.

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

func TestFamilyObserveRules(t *testing.T) {
	self := os.Getpid()
	root := platform.Proc{Pid: 100, PPid: 50, Pgid: 100, Sid: 50, StartTicks: 1}
	p := func(pid, ppid, pgid, sid int, start uint64, state byte) platform.Proc {
		return platform.Proc{Pid: pid, PPid: ppid, Pgid: pgid, Sid: sid, StartTicks: start, State: state}
	}
	base := []platform.Proc{
		root,
		p(50, 1, 50, 50, 1, 'S'),      // the guardian: the root's parent, never a member
		p(101, 100, 100, 50, 2, 'S'),  // the program
		p(102, 1, 100, 50, 3, 'S'),    // orphan still in the root's group
		p(103, 101, 103, 103, 4, 'S'), // setsid child of the program
		p(104, 1, 103, 103, 5, 'S'),   // orphan in that session
		p(105, 1, 105, 105, 6, 'S'),   // orphan in a session whose leader nobody saw
		p(106, 1, 106, 50, 7, 'S'),    // a stranger in the guardian's session
		p(self, 1, self, self, 8, 'S'),
		p(107, 1, 100, 50, 9, 'Z'), // a zombie of the group: a member, dead
	}
	f := newFamily(root, nil)
	require.Equal(t, []int{101, 102, 103, 104, 107}, pids(f.observe(base, nil)))

	// 101 and 103 die; 104 leaves the session it was found through. It was
	// seen, so it stays a member; a newcomer in 103's old session is not one:
	// with 103 gone that id is no longer proven ours.
	next := []platform.Proc{root, p(102, 1, 100, 50, 3, 'S'), p(104, 1, 104, 104, 5, 'S'), p(108, 1, 103, 103, 10, 'S')}
	require.Equal(t, []int{102, 104}, pids(f.observe(next, nil)))

	// A recycled pid (same number, later start) is someone else.
	recycled := []platform.Proc{root, p(102, 1, 102, 102, 99, 'S'), p(104, 1, 104, 104, 5, 'S')}
	require.Equal(t, []int{104}, pids(f.observe(recycled, nil)))

	// Skipped pids and their subtrees are left out.
	require.Equal(t, []int{102, 107}, pids(newFamily(root, nil).observe(base, []int{101})))

	// The root gone: its group id proves nothing any more, but members seen
	// before stay followed.
	g := newFamily(root, nil)
	g.observe(base, nil)
	gone := []platform.Proc{p(102, 1, 100, 50, 3, 'S'), p(109, 1, 100, 50, 11, 'S'), p(104, 1, 103, 103, 5, 'S')}
	require.Equal(t, []int{102, 104}, pids(g.observe(gone, nil)))
}

// stop kills the root and everything the tree recorded, then proves that
// nothing below the test process is left alive.
func (tr *tree) stop(t *testing.T) {
	_ = tr.cmd.Process.Kill()
	_ = tr.cmd.Wait()
	require.NoError(t, proctest.Kill(tr.recs...))
	left, err := proctest.Sweep(10 * time.Second)
	require.NoError(t, err)
	require.Empty(t, left, "processes left: %s", proctest.Describe(left))
	require.Empty(t, proctest.Alive(tr.recs))
}

// setsidCommand runs its arguments in a new session, in the same process when
// the caller does not lead its group (util-linux setsid).
func setsidCommand() string { return "setsid" }

func TestFamilyFollowsOrphansBeyondParentLinks(t *testing.T) {
	tr := startTree(t, orphanTree+"wait", "grouped", "daemon", "parent", "plain")
	r := platform.NewProcReader()
	proctest.WaitFor(t, 10*time.Second, "daemon in its own session, grouped orphaned", func() bool {
		d, g := tr.stat(t, "daemon"), tr.stat(t, "grouped")
		return d.Sid == d.Pid && d.PPid == tr.pid["parent"] && g.PPid == os.Getpid()
	})
	f := newFamily(tr.root, r.All)
	members, err := f.scan(nil)
	require.NoError(t, err)
	require.Subset(t, pids(members), []int{tr.pid["grouped"], tr.pid["daemon"], tr.pid["parent"], tr.pid["plain"]})

	// The daemon's parent dies: the daemon is now tied to the tree by nothing
	// but having been seen.
	require.NoError(t, r.Signal(tr.stat(t, "parent"), syscall.SIGKILL))
	proctest.WaitFor(t, 10*time.Second, "daemon orphaned", func() bool { return tr.stat(t, "daemon").PPid == os.Getpid() })
	below, err := r.Descendants(tr.root.Pid, nil)
	require.NoError(t, err)
	require.NotContains(t, pids(below), tr.pid["grouped"], "the parent walk should have lost the grouped orphan")
	require.NotContains(t, pids(below), tr.pid["daemon"], "the parent walk should have lost the daemon")

	members, err = f.scan(nil)
	require.NoError(t, err)
	require.Contains(t, pids(members), tr.pid["grouped"], "the group tie")
	require.Contains(t, pids(members), tr.pid["daemon"], "tracking")
	require.NotContains(t, pids(members), tr.root.Pid)
	require.NotContains(t, pids(members), os.Getpid())

	// The honest limit: a family that never saw the daemon cannot find it.
	fresh, err := newFamily(tr.root, r.All).scan(nil)
	require.NoError(t, err)
	require.Contains(t, pids(fresh), tr.pid["grouped"])
	require.NotContains(t, pids(fresh), tr.pid["daemon"], "an unseen escape was found: the stated limit is wrong")
}

func TestSweeperWithFamilyKillsWhatParentLinksMiss(t *testing.T) {
	// The root ignores TERM, INT and HUP like a shim absorbs them, and stays
	// when its children are gone; they inherit that, so only the stop-then-
	// kill sweeps can end them.
	tr := startTree(t, "trap '' TERM INT HUP\n"+orphanTree+"exec sleep 3600", "grouped", "daemon", "parent", "plain")
	r := platform.NewProcReader()
	proctest.WaitFor(t, 10*time.Second, "daemon in its own session, grouped orphaned", func() bool {
		d, g := tr.stat(t, "daemon"), tr.stat(t, "grouped")
		return d.Sid == d.Pid && d.PPid == tr.pid["parent"] && g.PPid == os.Getpid()
	})
	f := newFamily(tr.root, r.All)
	_, err := f.scan(nil) // what tracking records while the tree runs
	require.NoError(t, err)
	require.NoError(t, r.Signal(tr.stat(t, "parent"), syscall.SIGKILL))
	proctest.WaitFor(t, 10*time.Second, "daemon orphaned", func() bool { return tr.stat(t, "daemon").PPid == os.Getpid() })
	groupSignals := 0
	f.group = func(sig syscall.Signal) int {
		// The root is our unreaped child (its exec.Cmd has not waited), so
		// its group id is safe; a live root takes only what it absorbs.
		if !leaderAbsorbs(sig) || unix.Kill(-tr.root.Pid, sig) != nil {
			return 0
		}
		groupSignals++
		return tr.root.Pid
	}

	// Parent links alone: the plain child goes, the orphans stay.
	plain := newSweeper().terminate(tr.root.Pid, nil, time.Now(), 5*time.Second, io.Discard)
	require.True(t, plain.ProvenEmpty)
	for _, n := range []string{"grouped", "daemon"} {
		st, err := r.Stat(tr.pid[n])
		require.NoError(t, err, n)
		require.False(t, st.Dead(), "%s died: this test no longer shows what parent links miss", n)
	}

	s := newSweeper()
	s.family = f
	rep := s.terminate(tr.root.Pid, nil, time.Now().Add(300*time.Millisecond), 5*time.Second, io.Discard)
	require.True(t, rep.ProvenEmpty, "survivors: %+v", rep.Survivors)
	require.Empty(t, rep.Limit, "Linux reports no limit")
	require.GreaterOrEqual(t, rep.Killed, 2)
	require.Positive(t, groupSignals, "the TERM phase never signalled the group")
	for _, n := range []string{"grouped", "daemon"} {
		rec := proctest.Record{Pid: tr.pid[n], Start: 0}
		for _, rr := range tr.recs {
			if rr.Role == n {
				rec = rr
			}
		}
		require.False(t, rec.Alive(), "%s survived the family sweep", n)
	}
	root, err := r.Stat(tr.root.Pid)
	require.NoError(t, err)
	require.False(t, root.Dead(), "the root (a shim) must survive its group's teardown")
}

func TestLeaderReaperKeepsLeaderUntilGroupEmpty(t *testing.T) {
	// A child that leads a group exits at once, leaving a member behind. It is
	// started without exec.Cmd so that only the reaper under test reaps it.
	rd, wr, err := os.Pipe()
	require.NoError(t, err)
	defer rd.Close()
	leader, _, err := syscall.StartProcess("/bin/sh", []string{"sh", "-c", "sleep 3005 & echo $!"}, &syscall.ProcAttr{
		Files: []uintptr{0, wr.Fd(), 2}, Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	wr.Close()
	require.NoError(t, err)
	line, err := bufio.NewReader(rd).ReadString('\n')
	require.NoError(t, err)
	member, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	r := platform.NewProcReader()
	mp, err := r.Stat(member)
	require.NoError(t, err)
	rec := proctest.Record{Pid: member, Start: mp.StartTicks}
	t.Cleanup(func() {
		_ = proctest.Kill(rec)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(leader, &ws, unix.WNOHANG, nil)
		left, err := proctest.Sweep(10 * time.Second)
		require.NoError(t, err)
		require.Empty(t, left, proctest.Describe(left))
	})
	proctest.WaitFor(t, 10*time.Second, "the leader exited", func() bool {
		p, err := r.Stat(leader)
		return err == nil && p.Dead()
	})

	k := newLeaderReaper()
	reapAll := func() []int {
		var got []int
		for {
			var ws unix.WaitStatus
			pid, err := k.next(&ws)
			require.NoError(t, err)
			if pid == 0 {
				return got
			}
			got = append(got, pid)
			if pid == leader {
				require.True(t, ws.Exited(), "status %v", ws)
				require.Zero(t, ws.ExitStatus())
			}
		}
	}
	require.NotContains(t, reapAll(), leader, "a leader was reaped while its group had a live member")
	require.NotNil(t, k.retry(), "a kept leader must be looked at again")
	p, err := r.Stat(leader)
	require.NoError(t, err)
	require.True(t, p.Dead(), "the kept leader must still hold its pid as a zombie")

	require.NoError(t, proctest.Kill(rec))
	var reaped []int
	proctest.WaitFor(t, 10*time.Second, "the leader reaped once its group emptied", func() bool {
		reaped = append(reaped, reapAll()...)
		return slices.Contains(reaped, leader)
	})
	require.Nil(t, k.retry())
	_, err = r.Stat(leader)
	require.ErrorIs(t, err, platform.ErrNoProcess)
}

func TestLeadsLiveMembers(t *testing.T) {
	all := []platform.Proc{
		{Pid: 10, Pgid: 10, Sid: 5, State: 'Z'},
		{Pid: 11, Pgid: 10, Sid: 5, State: 'Z'},
		{Pid: 20, Pgid: 20, Sid: 20, State: 'Z'},
		{Pid: 21, Pgid: 21, Sid: 20, State: 'S'},
		{Pid: 30, Pgid: 30, Sid: 5, State: 'Z'},
		{Pid: 31, Pgid: 30, Sid: 5, State: 'T'},
	}
	require.False(t, leadsLiveMembers(10, all), "only dead members left")
	require.True(t, leadsLiveMembers(20, all), "a live member of its session")
	require.True(t, leadsLiveMembers(30, all), "a stopped member is alive")
	require.False(t, leadsLiveMembers(40, all))
}

func TestGuardianOfRunName(t *testing.T) {
	name := runName(platform.Proc{Pid: 12, StartTicks: 345}, platform.Proc{Pid: 678, StartTicks: 9012})
	g, ok := guardianOf(name)
	require.True(t, ok)
	require.Equal(t, platform.Proc{Pid: 678, Pgid: 678, Sid: 678, StartTicks: 9012}, g)
	for _, bad := range []string{"", "run-1.2-3", "run-1.2-1.4", "run-1.2-3.4x", "cg-1.2-3.4", "run-01.2-3.4"} {
		_, ok := guardianOf(bad)
		require.False(t, ok, bad)
	}
	// Linux needs no run family: the supervisor is a subreaper.
	s := newSweeper()
	s.followRun(name)
	require.Nil(t, s.family)
}

func TestReportLimitKeepsLinuxBytes(t *testing.T) {
	b, err := json.Marshal(Report{Backend: BackendProcessGroup, ProvenEmpty: true, Killed: 2, DurationMs: 7})
	require.NoError(t, err)
	require.Equal(t, `{"backend":"process-group","proven_empty":true,"killed":2,"duration_ms":7}`, string(b))
	b, err = json.Marshal(Report{Backend: BackendProcessGroup, Limit: "x"})
	require.NoError(t, err)
	require.Contains(t, string(b), `"limit":"x"`)
	r := Report{Backend: BackendProcessGroup}
	r.merge(Report{Limit: "x"})
	require.Equal(t, "x", r.Limit)
}
