//go:build linux

package platform

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// testCgroup makes an empty cgroup for one test directly below the cgroup v2
// mount (the root cgroup may hold processes and enable controllers at once) and
// kills everything in it and removes it, and the cgroups the test made below
// it, at the end.
func testCgroup(t *testing.T) (mount, dir string) {
	t.Helper()
	require.Zero(t, os.Geteuid(), "this test creates cgroups: run it as root, as CI does")
	mount, err := CgroupV2Mount()
	require.NoError(t, err)
	dir, err = os.MkdirTemp(mount, "octostore-cgroupfs-")
	require.NoError(t, err)
	t.Cleanup(func() {
		// Nothing the test started outlives it, whatever failed.
		require.NoError(t, KillCgroup(dir))
		empty, err := WaitCgroupEmpty(dir, time.Minute)
		require.NoError(t, err)
		require.True(t, empty, "%s empty at the end", dir)
		subs, _ := os.ReadDir(dir)
		for _, s := range subs {
			if s.IsDir() {
				require.NoError(t, unix.Rmdir(filepath.Join(dir, s.Name())))
			}
		}
		require.NoError(t, unix.Rmdir(dir))
	})
	return mount, dir
}

// startIn starts, born inside the cgroup dir, a shell that ignores SIGTERM and
// keeps two sleeping children of its own, and waits until all three are
// listed there. The shell is reaped when the test ends; the children are
// proven gone by the cgroup emptying, which each test waits for.
func startIn(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := startBornIn(t, dir, "/bin/sh", "-c", `trap "" TERM; sleep 1000 & sleep 1000 & wait`)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		return err == nil && len(strings.Fields(string(b))) == 3
	}, time.Minute, time.Millisecond, "the shell and its two children in %s", dir)
	return cmd
}

// CgroupProcs lists a cgroup and the cgroups below it; KillCgroup ends all of
// them at once, and the kernel then reports the cgroup empty.
func TestCgroupProcsAndKill(t *testing.T) {
	mount, dir := testCgroup(t)
	sub := filepath.Join(dir, "leaf")
	require.NoError(t, MakeCgroup(mount, sub, 0))
	top, below := startIn(t, dir), startIn(t, sub)

	pids, err := CgroupProcs(dir)
	require.NoError(t, err)
	require.Len(t, pids, 6, "three processes in the cgroup and three in the one below")
	require.Contains(t, pids, top.Process.Pid)
	require.Contains(t, pids, below.Process.Pid)
	leafOnly, err := CgroupProcs(sub)
	require.NoError(t, err)
	require.Len(t, leafOnly, 3)
	require.Contains(t, leafOnly, below.Process.Pid)

	require.NoError(t, KillCgroup(dir))
	requireKilled(t, dir, top, below)
	pids, err = CgroupProcs(dir)
	require.NoError(t, err)
	require.Empty(t, pids)

	us, err := CgroupCPUMicros(dir)
	require.NoError(t, err)
	require.Positive(t, us, "six processes started in it: some CPU time")
}

// Without cgroup.kill (before Linux 5.14) the cgroup is frozen, each member
// killed and the cgroup thawed: the kernel here has cgroup.kill, so this calls
// the fallback itself.
//
// Thawed is proven by a process born in each cgroup afterwards running to its
// end, not by the "frozen" key of cgroup.events: Linux 6.18 leaves the parent
// reporting "frozen 1" for good (cgroup.freeze 0, nothing in it frozen) in
// about one thaw in twenty when the child cgroup's killed members exit while
// the thaw walks down to it; with no members below, 300 of 300 read 0.
func TestKillFrozenWithoutCgroupKill(t *testing.T) {
	mount, dir := testCgroup(t)
	sub := filepath.Join(dir, "leaf")
	require.NoError(t, MakeCgroup(mount, sub, 0))
	top, below := startIn(t, dir), startIn(t, sub)

	require.NoError(t, killFrozen(dir))
	requireKilled(t, dir, top, below)
	for _, cg := range []string{dir, sub} {
		b, err := os.ReadFile(filepath.Join(cg, "cgroup.freeze"))
		require.NoError(t, err)
		require.Equal(t, "0", strings.TrimSpace(string(b)), "%s thawed", cg)
		requireRunsIn(t, cg)
	}
}

// requireRunsIn starts a process born inside the cgroup dir and requires it to
// exit on its own: in a frozen cgroup it would stop before its first
// instruction. If it does not end within the bound it is killed and reaped.
func requireRunsIn(t *testing.T, dir string) {
	t.Helper()
	cmd := startBornIn(t, dir, "/bin/true")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "a process born in %s ran to its end", dir)
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("a process born in %s did not end within a minute: still frozen", dir)
	}
}

// startBornIn starts name with args born inside the cgroup dir (clone into
// the cgroup, so it never runs outside it). The caller reaps it.
func startBornIn(t *testing.T, dir, name string, args ...string) *exec.Cmd {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	require.NoError(t, cmd.Start())
	return cmd
}

// A controller is enabled for a cgroup's children from the mount down, and a
// limit on one that is not available fails and leaves no cgroup behind. The
// pids controller is the one the supervisor uses; on a hybrid host it is a v1
// hierarchy's, so the test enables whichever controller the v2 root offers.
func TestMakeCgroupControllers(t *testing.T) {
	mount, dir := testCgroup(t)
	b, err := os.ReadFile(filepath.Join(mount, "cgroup.controllers"))
	require.NoError(t, err)
	offered := strings.Fields(string(b))
	require.ErrorContains(t, enableController(mount, "/tmp", "pids"), "the highest cgroup ours to write")

	if len(offered) > 0 {
		require.NoError(t, enableController(mount, dir, offered[0]))
		sub := filepath.Join(dir, "leaf")
		require.NoError(t, MakeCgroup(mount, sub, 0))
		got, err := os.ReadFile(filepath.Join(sub, "cgroup.controllers"))
		require.NoError(t, err)
		require.Contains(t, strings.Fields(string(got)), offered[0])
		require.NoError(t, unix.Rmdir(sub))
	}

	sub := filepath.Join(dir, "limited")
	err = MakeCgroup(mount, sub, 77)
	if !slices.Contains(offered, "pids") {
		require.ErrorContains(t, err, "enable the pids controller")
		_, serr := os.Stat(sub)
		require.ErrorIs(t, serr, os.ErrNotExist, "a failed cgroup is removed")
		return
	}
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(sub, "pids.max"))
	require.NoError(t, err)
	require.Equal(t, "77", strings.TrimSpace(string(got)))
}

// requireKilled waits for the kernel to report dir empty, and for each shell
// (one in dir, one below it) to have died of SIGKILL.
func requireKilled(t *testing.T, dir string, shells ...*exec.Cmd) {
	t.Helper()
	empty, err := WaitCgroupEmpty(dir, time.Minute)
	require.NoError(t, err)
	require.True(t, empty, "%s and the cgroup below it emptied", dir)
	for _, sh := range shells {
		require.Equal(t, syscall.SIGKILL, exitSignal(t, sh))
	}
}

func exitSignal(t *testing.T, cmd *exec.Cmd) syscall.Signal {
	t.Helper()
	_ = cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled(), "%s ended by a signal", cmd.Path)
	return ws.Signal()
}
