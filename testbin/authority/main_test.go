package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary double as the standalone authority, so the
// binary tests need no separate build step.
func TestMain(m *testing.M) {
	if os.Getenv("AUTHORITY_RUN_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// lockedBuffer collects stderr; exec copies into it from its own goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startBinary(t *testing.T, args ...string) (*exec.Cmd, string, *lockedBuffer) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "AUTHORITY_RUN_MAIN=1")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, stderr.String())
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return cmd, strings.TrimSpace(line), stderr
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("authority did not exit")
	}
	require.True(t, cmd.ProcessState.Exited())
	return cmd.ProcessState.ExitCode()
}

func TestStandaloneServesAndExitsOnSIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGTERM delivery")
	}
	cmd, url, stderr := startBinary(t, "--listen", "127.0.0.1:0", "--token", "T")
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, url)

	resp, err := http.Get(url + "/health")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, `{"db_size_bytes":4096,"status":"ok","storage":"wal"}`, string(b))

	req, _ := http.NewRequest("GET", url+"/locks/x", nil)
	req.Header.Set("Authorization", "Bearer T")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	// A stalled request must not keep the process alive after SIGTERM.
	resp, err = http.Post(url+"/__control/faults", "application/json", strings.NewReader(`{"kind":"stall_headers","route":"health"}`))
	require.NoError(t, err)
	resp.Body.Close()
	stalled := make(chan error, 1)
	go func() {
		r, err := http.Get(url + "/health")
		if err == nil {
			r.Body.Close()
		}
		stalled <- err
	}()
	require.Eventually(t, func() bool {
		r, err := http.Get(url + "/__control/requests?route=health")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return strings.Count(string(b), `"route":"health"`) == 2
	}, 5*time.Second, 20*time.Millisecond)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, waitExit(t, cmd), stderr.String())
	require.Error(t, <-stalled)
	_, err = http.Get(url + "/health")
	require.Error(t, err, "nothing listens after exit")
}

func TestStandaloneRefusesNonLoopback(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "--listen", "0.0.0.0:0")
	cmd.Env = append(os.Environ(), "AUTHORITY_RUN_MAIN=1")
	out, _ := cmd.CombinedOutput()
	require.True(t, cmd.ProcessState.Exited())
	require.Equal(t, 64, cmd.ProcessState.ExitCode())
	require.Contains(t, string(out), "non-loopback")
}
