package contain

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"golang.org/x/sys/unix"
)

// shimFdProbeEnv makes the contain test binary run shimFdProbe instead of the
// tests (main_linux_test.go's TestMain).
const shimFdProbeEnv = "OCTOSTORE_IT_SHIM_FD_PROBE"

// shimFdProbe starts a program as a shim of the process-group backend does
// (no cgroup leaf, so nothing was handed over as fdLeaf) and reports, by its
// exit code, whether the descriptor numbered fdLeaf, which the test handed in
// as a file of its own, is still open afterwards: 0 yes, 1 closed, 2 the
// start failed. The shim must close only the descriptors it was given for
// its program; a number it was not given is whatever the process opened
// there, the Go runtime's epoll descriptor among them.
func shimFdProbe() int {
	pid, err := startProgram(program{argv: []string{"/bin/true"}, env: []string{}})
	if err != nil {
		return 2
	}
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, 0, nil)
	if _, err := unix.FcntlInt(uintptr(fdLeaf), unix.F_GETFD, 0); err != nil {
		return 1
	}
	os.Stdout.WriteString("fd 6 open\n")
	return 0
}

// TestShimClosesOnlyItsOwnDescriptors: a shim of the process-group backend
// is handed descriptors 0-5 only, and after starting its program it must not
// close number 6 as if it were a cgroup leaf. It did, and where the Go
// runtime had put its epoll descriptor there (a non-root supervisor started
// with runuser, on a systemd host), the shim died with "epollwait on fd 6
// failed with 9" and the run ended 71. The probe is this test binary,
// re-executed with the shim's descriptors and a pipe as number 6.
func TestShimClosesOnlyItsOwnDescriptors(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	devnull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devnull.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), shimFdProbeEnv+"=1")
	cmd.Stdin = devnull
	// 3: the control socket's place, 4 and 5: the program's output, 6: the
	// descriptor the probe watches.
	cmd.ExtraFiles = []*os.File{devnull, devnull, devnull, w}
	out, err := cmd.CombinedOutput()
	w.Close()
	require.NoError(t, err, "the probe reports descriptor 6 closed (exit 1) or a failed start (exit 2): %s", out)
	require.Contains(t, string(out), "fd 6 open")
}
