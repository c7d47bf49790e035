package proctest

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A child that asks for a parent-death signal outlives every thread that a
// goroutine locks and abandons afterwards (doctor's throwaway probes, run
// in-process). Without StartOwned's kept thread, the thread that forked the
// child ending is enough to kill it.
func TestParentDeathSignalFollowsTheForkingThread(t *testing.T) {
	tied := func() *exec.Cmd {
		cmd := exec.Command("/bin/sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd
	}

	t.Run("undefended: the forking thread ends", func(t *testing.T) {
		cmd := forkOnEndingThread(t, tied)
		ws := waitFor(t, cmd)
		require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%v", ws)
	})

	t.Run("StartOwned: abandoned threads leave it alone", func(t *testing.T) {
		cmd := tied()
		done, err := StartOwned(cmd)
		require.NoError(t, err)
		for range 64 {
			ended := make(chan struct{})
			go func() {
				runtime.LockOSThread()
				close(ended)
			}()
			<-ended
		}
		select {
		case <-done:
			t.Fatalf("the child died: %v", cmd.ProcessState)
		case <-time.After(100 * time.Millisecond):
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		<-done
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.True(t, ws.Signaled(), "%v", ws)
	})
}

// forkOnEndingThread starts a command from a goroutine that returns locked
// to its thread, so the thread ends. Go keeps the process's main thread
// instead of ending it; a fork that landed there is killed and tried again.
func forkOnEndingThread(t *testing.T, newCmd func() *exec.Cmd) *exec.Cmd {
	t.Helper()
	for {
		cmd := newCmd()
		type fork struct {
			tid int
			err error
		}
		started := make(chan fork, 1)
		go func() {
			runtime.LockOSThread() // never unlocked
			err := cmd.Start()
			started <- fork{unix.Gettid(), err}
		}()
		f := <-started
		require.NoError(t, f.err)
		if f.tid != os.Getpid() {
			return cmd
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// waitFor reaps cmd under a generous bound and returns how it ended.
func waitFor(t *testing.T, cmd *exec.Cmd) syscall.WaitStatus {
	t.Helper()
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	select {
	case <-reaped:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-reaped
		t.Fatalf("pid %d still ran 10 s after its forking thread ended", cmd.Process.Pid)
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus)
}
