package platform

// Run on macOS only; CI cross-compiles and vets them.

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestDarwinStatAndAllAgree(t *testing.T) {
	r := NewProcReader()
	self, err := r.Stat(os.Getpid())
	require.NoError(t, err)
	require.Equal(t, os.Getppid(), self.PPid)
	pg, err := unix.Getpgid(0)
	require.NoError(t, err)
	require.Equal(t, pg, self.Pgid)
	require.Positive(t, self.StartTicks)
	require.False(t, self.Dead())
	all, err := r.All(nil)
	require.NoError(t, err)
	i := slices.IndexFunc(all, func(p Proc) bool { return p.Pid == os.Getpid() })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, self.StartTicks, all[i].StartTicks)
	require.Equal(t, self.PPid, all[i].PPid)
}

func TestDarwinGoneProcess(t *testing.T) {
	cmd := exec.Command("/usr/bin/true")
	require.NoError(t, cmd.Run())
	_, err := NewProcReader().Stat(cmd.Process.Pid)
	require.ErrorIs(t, err, ErrNoProcess)
	w, err := NewProcWatch()
	require.NoError(t, err)
	defer w.Close()
	require.ErrorIs(t, w.Add(cmd.Process.Pid), ErrNoProcess)
}

func TestDarwinProcWatchWakesOnExit(t *testing.T) {
	w, err := NewProcWatch()
	require.NoError(t, err)
	defer w.Close()
	woke, err := w.Wait(10 * time.Millisecond)
	require.NoError(t, err)
	require.False(t, woke, "an empty watch woke")

	cmd := exec.Command("/bin/sleep", "0.2")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	require.NoError(t, w.Add(cmd.Process.Pid))
	woke, err = w.Wait(10 * time.Second)
	require.NoError(t, err)
	require.True(t, woke, "no exit notification within 10s")
}

func TestDarwinSignalChecksIdentity(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "30")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := NewProcReader()
	p, err := r.Stat(cmd.Process.Pid)
	require.NoError(t, err)
	recycled := p
	recycled.StartTicks++
	require.ErrorIs(t, r.Signal(recycled, syscall.SIGKILL), ErrNoProcess)
	still, err := r.Stat(p.Pid)
	require.NoError(t, err)
	require.False(t, still.Dead())
	require.NoError(t, r.Signal(p, syscall.SIGKILL))
}
