package supervisor

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 32: what a local user of another uid takes (testbin/localuser).

// startLocalUser runs testbin/localuser as uid with args and returns once it
// says it holds what it took; at the end of the test it is stopped and
// proven gone.
func startLocalUser(t *testing.T, uid uint32, args ...string) {
	t.Helper()
	cmd := exec.Command(bins.localuser, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	var errb syncBuf
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(bound):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("localuser %v did not end on SIGTERM", args)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "localuser %v: %s", args, errb.String())
	require.Equal(t, "ready\n", line)
}

// relayAsNobody has nobody listen on listen and relay to target, logging
// what clients send; it returns the log's path.
func relayAsNobody(t *testing.T, listen, target string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	require.NoError(t, os.Chmod(dir, 0o777))
	log := filepath.Join(dir, "relayed")
	startLocalUser(t, nobody, "relay", listen, target, log)
	return log
}
