package proctest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/pidfile"
	"github.com/octostore-supervisor/supervisor/platform"
)

// The tests start /bin/sh; Main makes this test process the subreaper and
// proves at the end that nothing they started is alive.
func TestMain(m *testing.M) { Main(m, nil) }

const sh = Binary("/bin/sh")

// recordOf records a running process as a test would from its pidfile line.
func recordOf(t *testing.T, pid int) Record {
	t.Helper()
	p, err := Stat(pid)
	require.NoError(t, err)
	return Record{Pid: pid, Start: p.StartTicks}
}

// childOf waits for the single child of pid and records it.
func childOf(t *testing.T, pid int) platform.Proc {
	t.Helper()
	var kid platform.Proc
	WaitFor(t, 5*time.Second, "a child", func() bool {
		ps, err := platform.NewProcReader().Descendants(pid, nil)
		require.NoError(t, err)
		for _, p := range ps {
			if p.PPid == pid {
				kid = p
				return true
			}
		}
		return false
	})
	return kid
}

// The line a test program writes with internal/testkit/pidfile reads back as the
// process that wrote it, alive.
func TestPidfileRoundTrip(t *testing.T) {
	l, err := pidfile.Line("tester")
	require.NoError(t, err)
	pf := filepath.Join(t.TempDir(), "pids")
	require.NoError(t, os.WriteFile(pf, []byte(l), 0o644))
	recs, err := ReadPidfile(pf)
	require.NoError(t, err)
	require.Equal(t, []Record{recordOf(t, os.Getpid())}, []Record{{Pid: recs[0].Pid, Start: recs[0].Start}})
	assert.Equal(t, "tester", recs[0].Role)
	assert.True(t, recs[0].Alive())
}

func TestStartLinesAndExitCode(t *testing.T) {
	p := sh.Start(t, "", []string{"GREETING=hello"}, "-c", `echo "$GREETING"; echo oops >&2; echo second; exit 3`)
	l, ok := p.NextLine(t, 5*time.Second)
	require.True(t, ok)
	assert.Equal(t, "hello", l)
	l, _ = p.NextLine(t, 5*time.Second)
	assert.Equal(t, "second", l)
	assert.Equal(t, 3, p.ExitCode(t, 5*time.Second))
	assert.True(t, p.Exited())
	_, ok = p.NextLine(t, 5*time.Second)
	assert.False(t, ok, "EOF")
	assert.Equal(t, "oops\n", p.Stderr.String())
}

// A record whose start time differs is a recycled pid: dead to Alive, and
// never signalled.
func TestRecycledPidIsNeverSignalled(t *testing.T) {
	p := sh.Start(t, "", nil, "-c", "exec sleep 60")
	rec := recordOf(t, p.Cmd.Process.Pid)
	assert.True(t, rec.Alive())

	other := rec
	other.Start++
	assert.False(t, other.Alive())
	assert.Empty(t, Alive([]Record{other}))
	require.ErrorIs(t, Signal(other, syscall.SIGKILL), platform.ErrNoProcess)
	require.NoError(t, Kill(other))
	time.Sleep(50 * time.Millisecond) // time for a signal that wrongly went out to kill
	assert.False(t, p.Exited(), "a signal reached a process through a stale record")
	assert.Equal(t, []Record{rec}, Alive([]Record{rec, other}))

	require.NoError(t, Kill(rec))
	assert.Equal(t, -1, p.ExitCode(t, 5*time.Second), "killed by a signal")
	assert.False(t, rec.Alive())
}

// A zombie is dead: Alive says so and Signal refuses it. Once its parent dies
// it is orphaned to us, and Reap collects it.
func TestZombieIsDeadAndReaped(t *testing.T) {
	// sleep 60 inherits the exited child of sh and never waits for it.
	p := sh.Start(t, "", nil, "-c", "sleep 0 & exec sleep 60")
	parent := recordOf(t, p.Cmd.Process.Pid)
	z := childOf(t, parent.Pid)
	zrec := Record{Pid: z.Pid, Start: z.StartTicks, Role: "zombie"}
	WaitFor(t, 5*time.Second, "the zombie", func() bool {
		st, err := Stat(z.Pid)
		return err == nil && st.State == 'Z'
	})
	assert.False(t, zrec.Alive())
	require.ErrorIs(t, Signal(zrec, syscall.SIGTERM), platform.ErrNoProcess)

	Reap(zrec) // not ours yet: its parent lives
	st, err := Stat(z.Pid)
	require.NoError(t, err, "Reap took a zombie that is not our child")
	assert.Equal(t, parent.Pid, st.PPid)

	require.NoError(t, Kill(parent))
	p.ExitCode(t, 5*time.Second)
	WaitFor(t, 5*time.Second, "zombie reparented to us", func() bool {
		st, err := Stat(z.Pid)
		return err == nil && st.PPid == os.Getpid()
	})
	Reap(zrec)
	_, err = Stat(z.Pid)
	assert.True(t, errors.Is(err, platform.ErrNoProcess), "zombie not reaped: %v", err)
}

// Reap never takes a child that a Prog's exec.Cmd still has to wait for.
func TestReapLeavesProgChildren(t *testing.T) {
	// Alive long enough to be recorded (an instant exit could be reaped by
	// exec.Cmd before the record is taken), then Reap runs once it has died:
	// as a zombie only exec.Cmd may collect, or already collected.
	p := sh.Start(t, "", nil, "-c", "sleep 0.1; exit 5")
	rec := recordOf(t, p.Cmd.Process.Pid)
	WaitFor(t, 5*time.Second, "the child died", func() bool {
		st, err := Stat(rec.Pid)
		return err != nil || st.Dead()
	})
	Reap(rec)
	assert.Equal(t, 5, p.ExitCode(t, 5*time.Second), "exec.Cmd.Wait got the real status")
}

// A double-forked daemon is orphaned to the subreaper; Sweep kills it and
// reaps it, and the pidfile records prove it dead.
func TestSweepKillsOrphans(t *testing.T) {
	pf := filepath.Join(t.TempDir(), "pids")
	p := sh.Start(t, pf, nil, "-c", `(trap '' TERM; exec sleep 60 </dev/null >/dev/null 2>&1) & echo $!`)
	l, ok := p.NextLine(t, 5*time.Second)
	require.True(t, ok)
	assert.Equal(t, 0, p.ExitCode(t, 5*time.Second))
	pid, err := strconv.Atoi(l)
	require.NoError(t, err)
	orphan := recordOf(t, pid)
	WaitFor(t, 5*time.Second, "the orphan reparented to us", func() bool {
		st, err := Stat(pid)
		return err == nil && st.PPid == os.Getpid()
	})
	// Record it as a test program would, for the cleanup's own proof.
	require.NoError(t, os.WriteFile(pf, []byte(strconv.Itoa(pid)+" "+strconv.FormatUint(orphan.Start, 10)+" daemon\n"), 0o644))

	left, err := Sweep(5 * time.Second)
	require.NoError(t, err)
	assert.Empty(t, left)
	assert.False(t, orphan.Alive())
	_, err = Stat(pid)
	assert.True(t, errors.Is(err, platform.ErrNoProcess), "orphan not reaped: %v", err)
}
