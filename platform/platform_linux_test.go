package platform

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestParseStatHostileComm(t *testing.T) {
	// A process may name itself ") R 1 1 1" to confuse naive parsers; the comm
	// ends at the last ')'.
	line := []byte("4242 (a) R 1 1 1 (x) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n")
	p, err := parseStat(4242, line)
	require.NoError(t, err)
	require.Equal(t, "a) R 1 1 1 (x", p.Comm)
	require.Equal(t, byte('S'), p.State)
	require.Equal(t, 17, p.PPid)
	require.Equal(t, 4242, p.Pgid)
	require.Equal(t, uint64(987654), p.StartTicks)

	_, err = parseStat(1, []byte("1 (init"))
	require.Error(t, err)
}

func TestDescendantsAndSignal(t *testing.T) {
	// sh -> sleep: both below us; skipping sh hides its subtree.
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & wait")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := NewProcReader()
	var ds []Proc
	require.Eventually(t, func() bool {
		ds, _ = r.Descendants(os.Getpid(), nil)
		n := 0
		for _, d := range ds {
			if d.Pid == cmd.Process.Pid || d.PPid == cmd.Process.Pid {
				n++
			}
		}
		return n == 2
	}, 5*time.Second, 5*time.Millisecond)
	skipped, err := r.Descendants(os.Getpid(), nil, cmd.Process.Pid)
	require.NoError(t, err)
	for _, d := range skipped {
		require.NotEqual(t, cmd.Process.Pid, d.PPid, "a skipped subtree was returned")
	}

	sh, err := r.Stat(cmd.Process.Pid)
	require.NoError(t, err)
	recycled := sh
	recycled.StartTicks++ // the same pid naming a later process
	require.ErrorIs(t, r.Signal(recycled, syscall.SIGKILL), ErrNoProcess)
	still, err := r.Stat(cmd.Process.Pid)
	require.NoError(t, err)
	require.False(t, still.Dead(), "a process was signalled through a recycled identity")

	require.NoError(t, r.Signal(sh, syscall.SIGKILL))
	_ = cmd.Wait()
	require.ErrorIs(t, r.Signal(sh, syscall.SIGKILL), ErrNoProcess)
}

// TestDescendantsWalkFindsWhatTheTableHas: the walk through the kernel's
// lists of children finds the same tree as a scan of the whole table, also for
// children forked by threads other than the leader (each thread has its own
// list) and below a middle process.
func TestDescendantsWalkFindsWhatTheTableHas(t *testing.T) {
	r := NewProcReader()
	require.True(t, r.childLists, "this kernel keeps no lists of children; the walk is untested here")

	// Four children, each forked from a thread of its own, each with a child
	// and a grandchild of its own: sh -> (sh -> sleep).
	var cmds []*exec.Cmd
	var mu sync.Mutex
	var started sync.WaitGroup
	release := make(chan struct{})
	for range 4 {
		started.Add(1)
		go func() {
			// The thread stays until the end: when a thread exits, its
			// children move to another thread's list, mostly the leader's.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cmd := exec.Command("/bin/sh", "-c", "(sleep 30 & wait) & wait")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // one group per tree, to end it whole
			err := cmd.Start()
			if err == nil {
				mu.Lock()
				cmds = append(cmds, cmd)
				mu.Unlock()
			}
			started.Done()
			<-release
		}()
	}
	started.Wait()
	var walked []int
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		}
		close(release)
		// The grandchildren were re-parented to PID 1: gone or a zombie.
		for _, pid := range walked {
			require.Eventually(t, func() bool {
				p, err := r.Stat(pid)
				return err != nil || p.Dead()
			}, 10*time.Second, 5*time.Millisecond, "pid %d outlived the test", pid)
		}
	})
	require.Len(t, cmds, 4)

	self := os.Getpid()
	var walkErr error
	require.Eventually(t, func() bool {
		var ws []Proc
		if ws, walkErr = r.Descendants(self, nil); walkErr != nil {
			return false // asserted below: require must not run off the test's goroutine
		}
		walked = pidsOf(ws)
		return len(walked) == 3*len(cmds) // sh, sh, sleep each
	}, 10*time.Second, 5*time.Millisecond, "the walk never found all %d processes", 3*len(cmds))
	require.NoError(t, walkErr)
	all, err := r.All(nil)
	require.NoError(t, err)
	scanned := pidsOf(DescendantsIn(all, self, nil))
	require.Equal(t, scanned, walked)

	r.childLists = false
	ss, err := r.Descendants(self, nil)
	require.NoError(t, err)
	require.Equal(t, walked, pidsOf(ss), "the whole-table fallback disagrees")

	// The walk is only as good as its reads of every thread's list: at least
	// one child must be listed under a thread other than the leader, or this
	// test proves nothing about that.
	onOtherThreads := 0
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	for _, task := range tasks {
		if task.Name() == strconv.Itoa(self) {
			continue
		}
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if err == nil {
			onOtherThreads += len(strings.Fields(string(b)))
		}
	}
	require.NotZero(t, onOtherThreads, "every child is on the leader's list")
}

// TestDescendantsWalkWhileThreadsExit: a child moves to another thread's
// list when the thread that forked it exits, as the shim's spawning thread
// does right after every start. Walks racing such exits must still find
// every child started before the walk began.
func TestDescendantsWalkWhileThreadsExit(t *testing.T) {
	r := NewProcReader()
	var mu sync.Mutex
	var started []*exec.Cmd
	spawned := make(chan struct{})
	t.Cleanup(func() {
		<-spawned // nothing is started after this
		mu.Lock()
		defer mu.Unlock()
		for _, c := range started {
			_ = c.Process.Kill()
			_ = c.Wait() // our own children: reaped here, gone after
		}
	})
	const n = 60
	go func() {
		defer close(spawned)
		for range n {
			done := make(chan struct{})
			go func() {
				defer close(done)
				runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
				cmd := exec.Command("/bin/sleep", "30")
				if cmd.Start() == nil {
					mu.Lock()
					started = append(started, cmd)
					mu.Unlock()
				}
			}()
			<-done
		}
	}()
	walks := 0
	for running := true; running; walks++ {
		select {
		case <-spawned:
			running = false
		default:
		}
		mu.Lock()
		var want []int
		for _, c := range started {
			want = append(want, c.Process.Pid)
		}
		mu.Unlock()
		ds, err := r.Descendants(os.Getpid(), nil)
		require.NoError(t, err)
		have := map[int]bool{}
		for _, d := range ds {
			have[d.Pid] = true
		}
		for _, pid := range want {
			require.True(t, have[pid], "walk %d missed child %d, started before it", walks, pid)
		}
	}
	require.Len(t, started, n)
	t.Logf("%d walks raced %d thread exits", walks, n)
}

func TestContinuousClockAndTimer(t *testing.T) {
	a, err := ContinuousMillis()
	require.NoError(t, err)
	tm, err := NewContinuousTimer()
	require.NoError(t, err)
	defer tm.Close()
	require.NoError(t, tm.Set(a+50))
	require.NoError(t, tm.Wait())
	b, err := ContinuousMillis()
	require.NoError(t, err)
	require.GreaterOrEqual(t, b, a+50, "the timer fired before its continuous-clock deadline")

	// Re-arming replaces the deadline; Close wakes a pending Wait.
	require.NoError(t, tm.Set(b+60_000))
	done := make(chan error, 1)
	go func() { done <- tm.Wait() }()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, tm.Close())
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake Wait")
	}
}

func TestReserveThreads(t *testing.T) {
	count := func() int {
		es, err := os.ReadDir("/proc/self/task")
		require.NoError(t, err)
		return len(es)
	}
	ReserveThreads(16)
	require.GreaterOrEqual(t, count(), 16)
}

// A cgroup is delegated to us when we own it and its owner may write it, not
// when access(2) says we may write: as root access(2) says yes to everything
// (issue 10). The test's cgroups are created below its own cgroup, as root
// (CI is root), and chowned or chmodded away one file at a time.
func TestDelegatedByOwnershipAndMode(t *testing.T) {
	require.Zero(t, os.Geteuid(), "this test creates and chowns cgroups: run it as root, as CI does")
	mount, err := CgroupV2Mount()
	require.NoError(t, err)
	own, err := OwnCgroupV2()
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		alter func(dir string) error
		want  string
	}{
		{"created by us", func(string) error { return nil }, ""},
		{"chowned to another user", func(dir string) error {
			for _, p := range []string{dir, dir + "/cgroup.procs", dir + "/cgroup.subtree_control"} {
				if err := os.Chown(p, 65534, 65534); err != nil {
					return err
				}
			}
			return nil
		}, "is owned by uid 65534, not by us (uid 0): not delegated to us"},
		{"subtree_control not ours", func(dir string) error { return os.Chown(dir+"/cgroup.subtree_control", 65534, 65534) },
			"cgroup.subtree_control is owned by uid 65534"},
		{"cgroup.procs read-only", func(dir string) error { return os.Chmod(dir+"/cgroup.procs", 0o444) },
			"cgroup.procs is not writable by its owner (mode 444)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, err := os.MkdirTemp(mount+own, "octostore-delegation-")
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, syscall.Rmdir(dir)) })
			require.NoError(t, c.alter(dir))
			err = Delegated(dir)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.want)
		})
	}
}

// The state in /proc/PID/stat is the leader thread's: Z with num_threads above
// one is a leader that left while its other threads run on, which is alive.
func TestDeadByThreadGroup(t *testing.T) {
	for _, c := range []struct {
		state   string
		threads int
		dead    bool
	}{
		{"S", 1, false},
		{"R", 4, false},
		{"Z", 1, true},
		{"Z", 2, false},
		{"Z", 17, false},
		{"X", 1, true},
	} {
		line := fmt.Appendf(nil, "4242 (w) %s 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 %d 0 987654 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n", c.state, c.threads)
		p, err := parseStat(4242, line)
		require.NoError(t, err)
		require.Equal(t, c.threads, p.Threads)
		require.Equal(t, c.dead, p.Dead(), "state %s with %d threads", c.state, c.threads)
	}
}

// WaitExited says true only once every process has exited, a zombie
// counting as exited, and says it when that happens: with a minute to wait it
// returns at the exit (the test would otherwise take that minute and fail).
func TestWaitExited(t *testing.T) {
	r := NewProcReader()
	var cmds []*exec.Cmd
	var procs []Proc
	for range 2 {
		c := exec.Command("sleep", "60")
		require.NoError(t, c.Start())
		cmds = append(cmds, c)
		p, err := r.Stat(c.Process.Pid)
		require.NoError(t, err)
		procs = append(procs, p)
	}
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		}
	})

	done, err := WaitExited(procs, 50*time.Millisecond)
	require.NoError(t, err)
	require.False(t, done, "both still run")

	require.NoError(t, cmds[0].Process.Kill())
	done, err = WaitExited(procs, 50*time.Millisecond)
	require.NoError(t, err)
	require.False(t, done, "the second still runs")

	go func() { _ = cmds[1].Process.Kill() }()
	began := time.Now()
	done, err = WaitExited(procs, time.Minute)
	require.NoError(t, err)
	require.True(t, done)
	require.Less(t, time.Since(began), 30*time.Second, "it returned at the exit, not at its timeout")
	for _, p := range procs {
		now, err := r.Stat(p.Pid)
		require.NoError(t, err, "not reaped yet: a zombie")
		require.True(t, now.Dead())
	}

	for _, c := range cmds {
		_ = c.Wait()
	}
	reaped = true
	done, err = WaitExited(procs, time.Minute)
	require.NoError(t, err)
	require.True(t, done, "reaped processes have exited")
}

// A process that exits after its task directory was opened makes getdents
// fail with ENOENT: the teardown scan takes it as gone (ErrNoProcess), not as
// a failed scan (seen in a container's teardown: "read /proc/58/task: no such
// file or directory").
func TestTaskDirectoryOfAnExitedProcess(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "60")
	require.NoError(t, cmd.Start())
	dir := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task"
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait() // reaped: its /proc directory is gone
	_, err = unix.Getdents(fd, make([]byte, 4096))
	require.ErrorIs(t, err, unix.ENOENT, "the kernel's answer the scan must take as gone")
	_, err = unix.Seek(fd, 0, 0)
	require.NoError(t, err)
	_, err = NewProcReader().readNumericEntries(fd, dir, nil)
	require.ErrorIs(t, err, ErrNoProcess)
}
