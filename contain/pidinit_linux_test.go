package contain

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A --private-pids worker's init ends, and the kernel with it ends everything
// in its namespace, as soon as the shim that started it is gone, through
// the pidfd the shim hands it (--follow): nothing else would end a namespace
// whose init a worker moved out of its cgroup when the supervisor side was
// killed. Without --follow the same init lives on, so the test can fail.
func TestNamespaceInitEndsWithItsShim(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starts the init as root (MAP -)")
	}
	for _, follow := range []bool{true, false} {
		shim := exec.Command("sleep", "600") // stands in for the shim
		require.NoError(t, shim.Start())
		pidfd, err := unix.PidfdOpen(shim.Process.Pid, 0)
		require.NoError(t, err)
		args := []string{"octostore-supervisor", PidInitArg, "-", "-"}
		if follow {
			args = append(args, followArg+"3")
		}
		init := exec.Command(os.Args[0])
		init.Args = append(args, "--", "/bin/sleep", "600")
		init.Env = append(os.Environ(), helperMainEnv+"=1")
		// Closed through the *os.File only: a raw close would leave its
		// finalizer to close whatever later reuses the number (it closed
		// another test's TempDir descriptor mid-RemoveAll).
		pf := os.NewFile(uintptr(pidfd), "shim pidfd")
		init.ExtraFiles = []*os.File{pf}
		init.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
		require.NoError(t, init.Start())
		pf.Close()
		ended := make(chan error, 1)
		go func() { ended <- init.Wait() }()

		require.NoError(t, shim.Process.Kill())
		_ = shim.Wait()
		if follow {
			select {
			case err := <-ended:
				require.Error(t, err, "the init exits non-zero once its shim is gone")
			case <-time.After(10 * time.Second):
				t.Fatal("the init outlived its shim")
			}
			continue
		}
		select {
		case err := <-ended:
			t.Fatalf("without --follow the init ended with its shim (%v): the test could not fail", err)
		case <-time.After(300 * time.Millisecond): // a bound that proves it stayed
		}
		require.NoError(t, init.Process.Kill()) // unreaped: its pid is still its own
		<-ended
	}
}
