//go:build linux

package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/internal/proctest"
)

// member is one etcd server this test started (until internal/etcdtest,
// the shared 3-member harness, is on main).
type member struct {
	endpoint string // 127.0.0.1:port
	cmd      *exec.Cmd
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startMember starts one etcd member on loopback ports of its own, data on
// /dev/shm, and stops it (TERM, then KILL) and proves it reaped at cleanup.
func startMember(t *testing.T) *member {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	require.NoError(t, err, "etcd is missing: apt-get install etcd-server etcd-client")
	dir, err := os.MkdirTemp("/dev/shm", "etcdauth-")
	require.NoError(t, err)
	client, peer := freePort(t), freePort(t)
	cu, pu := fmt.Sprintf("http://127.0.0.1:%d", client), fmt.Sprintf("http://127.0.0.1:%d", peer)
	log, err := os.Create(filepath.Join(dir, "etcd.log"))
	require.NoError(t, err)
	cmd := exec.Command(bin, "--name", "m1", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", cu, "--advertise-client-urls", cu,
		"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu, "--initial-cluster", "m1="+pu,
		"--heartbeat-interval", "100", "--election-timeout", "1000", "--logger", "zap", "--log-level", "error")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	m := &member{endpoint: fmt.Sprintf("127.0.0.1:%d", client), cmd: cmd}
	t.Cleanup(func() { m.stop(t); log.Close(); os.RemoveAll(dir) })
	c := m.client(t)
	proctest.WaitFor(t, 30*time.Second, "etcd member serving", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.Put(clientv3.WithRequireLeader(ctx), "/ready", "1")
		return err == nil
	})
	return m
}

// stop ends the member and proves it is gone: Wait returns only once the
// process has exited and been reaped.
func (m *member) stop(t *testing.T) {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- m.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	require.ErrorIs(t, syscall.Kill(m.cmd.Process.Pid, 0), syscall.ESRCH, "etcd member still present")
}

// client is a plain client for the test's own reads and faults.
func (m *member) client(t *testing.T) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// env allows Debian's 3.4.23 for this test only.
func oldServerEnv(k string) (string, bool) {
	if k == envAllowOldServer {
		return "1", true
	}
	return "", false
}

func (m *member) authority(t *testing.T, prefix string) *Authority {
	t.Helper()
	a, err := Open("etcd://"+m.endpoint+prefix, oldServerEnv, false)
	require.NoError(t, err)
	a.Diag = &proctest.SyncBuffer{}
	t.Cleanup(func() { a.Close() })
	return a
}

// running is one Hold in a goroutine.
type running struct {
	out, diag proctest.SyncBuffer
	sigs      chan os.Signal
	code      chan int
	spec      hold.HoldSpec
}

func startHold(t *testing.T, a *Authority, spec hold.HoldSpec) *running {
	t.Helper()
	r := &running{sigs: make(chan os.Signal, 2), code: make(chan int, 1)}
	if spec.TTL == 0 {
		spec.TTL = 10 * time.Second
	}
	spec.Out, spec.Diag = &r.out, &r.diag
	r.spec = spec
	go func() { r.code <- a.Hold(context.Background(), spec, r.sigs) }()
	t.Cleanup(func() {
		select {
		case <-r.code:
		default:
			r.sigs <- syscall.SIGTERM
			select {
			case <-r.code:
			case <-time.After(10 * time.Second):
				t.Errorf("hold did not end after SIGTERM; out:\n%s", r.out.String())
			}
		}
	})
	return r
}

func election(name, candidate string) hold.HoldSpec {
	return hold.HoldSpec{Kind: hold.KindElection, Name: name, Candidate: candidate}
}

func lock(name string) hold.HoldSpec { return hold.HoldSpec{Kind: hold.KindLock, Name: name} }

// events parses the lines so far, each validated by the supervisor's own
// stream reader (the golden shape of every line).
func (r *running) events(t *testing.T) []map[string]any {
	t.Helper()
	kind := events.Election
	if r.spec.Kind == hold.KindLock {
		kind = events.Lock
	}
	st := events.NewStream(events.Expect{Kind: kind, Name: r.spec.Name, Candidate: r.spec.Candidate})
	var out []map[string]any
	for _, l := range r.out.Lines() {
		_, err := st.Next([]byte(l))
		require.NoError(t, err, "line %q", l)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		out = append(out, m)
	}
	return out
}

// waitEvent waits for the first event named name and returns it.
func (r *running) waitEvent(t *testing.T, name string, timeout time.Duration) map[string]any {
	t.Helper()
	var got map[string]any
	proctest.WaitFor(t, timeout, "event "+name+" (out so far: "+r.out.String()+" diag: "+r.diag.String()+")", func() bool {
		for _, e := range r.events(t) {
			if e["event"] == name {
				got = e
				return true
			}
		}
		return false
	})
	return got
}

func (r *running) count(t *testing.T, name string) int {
	n := 0
	for _, e := range r.events(t) {
		if e["event"] == name {
			n++
		}
	}
	return n
}

func (r *running) exit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case c := <-r.code:
		r.code <- c
		return c
	case <-time.After(timeout):
		t.Fatalf("hold did not end within %v; out:\n%s\ndiag:\n%s", timeout, r.out.String(), r.diag.String())
		return 0
	}
}

func term(e map[string]any) int64 { return int64(e["term"].(float64)) }

// keys lists the keys under prefix with their create revisions.
func keys(t *testing.T, c *clientv3.Client, prefix string) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	out := map[string]int64{}
	for _, kv := range g.Kvs {
		out[string(kv.Key)] = kv.CreateRevision
	}
	return out
}
