package etcdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// Member is one etcd process of a Cluster. Its methods belong to the test
// that started the cluster: they fail that test on error.
type Member struct {
	c    *Cluster
	i    int
	name string
	dir  string // data directory; the log is dir + ".log"

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    <-chan struct{} // closed once the current process is reaped
	stopped bool
}

// ClientAddr is the member's own client address (host:port), bypassing any
// proxy.
func (m *Member) ClientAddr() string { return addr(m.c.ports.client(m.i)) }

func (m *Member) peerURL() string { return "http://" + addr(m.c.ports.peer(m.i)) }

// Socket is the path of the unix socket the member serves clients on when
// the cluster has Options.Unix. etcd takes a unix URL's host:port as a path
// relative to its working directory, the cluster's directory.
func (m *Member) Socket() string { return filepath.Join(m.c.dir, m.name+".sock:1") }

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// start runs the member's server process: with its data directory new, it
// joins the initial cluster; with it there, it resumes from it.
func (m *Member) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.c
	var initial string
	for i := range members {
		if i > 0 {
			initial += ","
		}
		initial += fmt.Sprintf("m%d=http://%s", i, addr(c.ports.peer(i)))
	}
	client := "http://" + m.ClientAddr()
	if c.opts.Unix {
		client += ",unix://" + m.name + ".sock:1"
	}
	cmd := exec.Command(c.server.Path,
		"--name", m.name,
		"--data-dir", m.dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", m.peerURL(), "--initial-advertise-peer-urls", m.peerURL(),
		"--initial-cluster", initial,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", fmt.Sprintf("octostore-etcdtest-%d", c.ports.base),
		"--heartbeat-interval", strconv.FormatInt(c.opts.Heartbeat.Milliseconds(), 10),
		"--election-timeout", strconv.FormatInt(c.opts.ElectionTimeout.Milliseconds(), 10),
		"--log-level", "warn",
	)
	cmd.Dir = c.dir
	log, err := os.OpenFile(m.dir+".log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("member %s log: %w", m.name, err)
	}
	defer log.Close() // the child has its own copy
	cmd.Stdout, cmd.Stderr = log, log
	// The member dies with the test binary, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done, err := proctest.StartOwned(cmd)
	if err != nil {
		return fmt.Errorf("start member %s (%s): %w", m.name, c.server.Path, err)
	}
	// The record lets cleanup prove this very process gone. A process that
	// already exited and was reaped has no start time left, nor anything to
	// prove.
	if st, err := proctest.Stat(cmd.Process.Pid); err == nil {
		c.record(proctest.Record{Pid: cmd.Process.Pid, Start: st.StartTicks, Role: m.name})
	}
	m.cmd, m.done, m.stopped = cmd, done, false
	return nil
}

// running reports whether the member's process is alive and not stopped.
func (m *Member) running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.alive() && !m.stopped
}

func (m *Member) alive() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the member's current process; the exec.Cmd has not
// reaped it, so its pid cannot have been recycled.
func (m *Member) signal(sig syscall.Signal) {
	m.c.t.Helper()
	if !m.alive() {
		m.c.t.Fatalf("member %s: %v to a process that is not running", m.name, sig)
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		m.c.t.Fatalf("member %s: %v: %v", m.name, sig, err)
	}
}

// Kill sends SIGKILL and waits until the process is reaped.
func (m *Member) Kill() {
	m.c.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.signal(syscall.SIGKILL)
	m.wait(m.c.t, 10*time.Second)
}

func (m *Member) wait(t testing.TB, limit time.Duration) bool {
	select {
	case <-m.done:
		return true
	case <-time.After(limit):
		t.Errorf("member %s (pid %d) not reaped within %v", m.name, m.cmd.Process.Pid, limit)
		return false
	}
}

// Stop sends SIGSTOP and waits until every thread of the member is stopped.
func (m *Member) Stop() {
	m.c.t.Helper()
	m.signalUntil(syscall.SIGSTOP, true, "stopped", proctest.AllThreadsStopped)
}

// Cont sends SIGCONT and waits until the member runs again.
func (m *Member) Cont() {
	m.c.t.Helper()
	m.signalUntil(syscall.SIGCONT, false, "running", func(pid int) bool {
		p, err := proctest.Stat(pid)
		return err == nil && p.State != 'T' && p.State != 't'
	})
}

// signalUntil sends sig, waits until done holds for the member's pid and
// then records whether the member is now stopped.
func (m *Member) signalUntil(sig syscall.Signal, stopped bool, what string, done func(pid int) bool) {
	m.c.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.signal(sig)
	pid := m.cmd.Process.Pid
	proctest.WaitFor(m.c.t, 10*time.Second, "member "+m.name+" "+what, func() bool { return done(pid) })
	m.stopped = stopped
}

// Restart starts a killed member again on its data directory and ports, and
// waits until it answers and reports a leader.
func (m *Member) Restart(t testing.TB) {
	t.Helper()
	m.mu.Lock()
	alive := m.alive()
	m.mu.Unlock()
	if alive {
		t.Fatalf("member %s: Restart of a member that is still running (Kill it first)", m.name)
	}
	if err := m.start(); err != nil {
		t.Fatalf("%v", err)
	}
	proctest.WaitFor(t, readyLimit, "member "+m.name+" to rejoin with a leader", func() bool {
		st, err := m.status()
		return err == nil && st.Leader != 0
	})
}

// status asks the member itself, directly, with a short deadline: a stopped
// member must not hold up the caller.
func (m *Member) status() (*clientv3.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return m.c.direct.Status(ctx, m.ClientAddr())
}

// Pid is the member's current process id.
func (m *Member) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd.Process.Pid
}

// terminate asks the member to exit, for cleanup: SIGCONT first, since a
// stopped member cannot act on SIGTERM.
func (m *Member) terminate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.alive() {
		_ = m.cmd.Process.Signal(syscall.SIGCONT)
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// reap waits until deadline for the member to exit after terminate, then
// SIGKILLs it and waits for that.
func (m *Member) reap(t testing.TB, deadline time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return
	}
	select {
	case <-m.done:
		return
	case <-time.After(time.Until(deadline)):
	}
	t.Logf("member %s did not exit within 5 s of SIGTERM: SIGKILL", m.name)
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	m.wait(t, 10*time.Second)
}

// logTail is the end of the member's log, for a failure message.
func (m *Member) logTail() string {
	b, _ := os.ReadFile(m.dir + ".log")
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
