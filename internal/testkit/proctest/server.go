package proctest

import (
	"bufio"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// StartServer runs a test server binary that prints its URL as the first line
// on stdout (testbin/authority) and returns that URL. At the end of the test the
// server gets SIGTERM and must exit within 5 s; otherwise it is killed and the
// test fails, so no server outlives its test.
func StartServer(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s did not exit cleanly on SIGTERM: %v", bin, err)
			}
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("%s did not exit on SIGTERM", bin)
		}
	})
	sc := bufio.NewScanner(out)
	require.True(t, sc.Scan(), "%s printed no URL", bin)
	go func() {
		for sc.Scan() {
		}
	}()
	return strings.TrimSpace(sc.Text())
}
