//go:build linux

package etcd

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// etcdctl runs one etcdctl command in its own process group; at cleanup it
// is interrupted, killed if need be, and proven reaped.
type etcdctl struct {
	cmd  *exec.Cmd
	out  proctest.SyncBuffer
	done <-chan struct{}
}

func startEtcdctl(t *testing.T, m *cluster, args ...string) *etcdctl {
	t.Helper()
	bin, err := exec.LookPath("etcdctl")
	require.NoError(t, err, "etcdctl is missing: apt-get install etcd-client")
	e := &etcdctl{cmd: exec.Command(bin, append([]string{"--endpoints=" + strings.Join(m.Endpoints(), ",")}, args...)...)}
	e.cmd.Env = []string{"ETCDCTL_API=3"}
	e.cmd.Stdout, e.cmd.Stderr = &e.out, &e.out
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	done, err := proctest.StartOwned(e.cmd)
	require.NoError(t, err)
	e.done = done
	t.Cleanup(func() {
		_ = e.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-e.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
			<-e.done
		}
		require.ErrorIs(t, syscall.Kill(e.cmd.Process.Pid, 0), syscall.ESRCH, "etcdctl still present")
	})
	return e
}

func (e *etcdctl) interrupt(t *testing.T) {
	t.Helper()
	require.NoError(t, e.cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("etcdctl did not end on SIGINT; out: %s", e.out.String())
	}
}

// `etcdctl elect -l` (concurrency.Election.Observe) reports our leader's
// candidate id: the key layout is the concurrency package's.
func TestEtcdctlElectObservesOurLeader(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		a := m.authority(t, "/t9")
		h := startHold(t, a, election("room", "alpha"))
		h.waitEvent(t, "leader", 20*time.Second)
		obs := startEtcdctl(t, m, "elect", "-l", "/t9/election/room")
		proctest.WaitFor(t, 20*time.Second, "etcdctl elect -l to print alpha", func() bool {
			return strings.Contains(obs.out.String(), "\nalpha\n")
		})
	})
}

// An `etcdctl lock` holder and our lock hold exclude each other, both ways.
func TestEtcdctlLockAndOurLockExcludeEachOther(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		c := m.Client(t)
		a := m.authority(t, "/t10")
		theirs := startEtcdctl(t, m, "lock", "/t10/lock/jobs")
		proctest.WaitFor(t, 20*time.Second, "etcdctl to hold the lock", func() bool {
			return strings.Contains(theirs.out.String(), "/t10/lock/jobs/")
		})
		ours := startHold(t, a, lock("jobs"))
		ours.waitEvent(t, "waiting", 20*time.Second)
		require.Zero(t, ours.count(t, "acquired"))
		theirs.interrupt(t)
		ours.waitEvent(t, "acquired", 20*time.Second)

		next := startEtcdctl(t, m, "lock", "/t10/lock/jobs")
		proctest.WaitFor(t, 20*time.Second, "etcdctl to queue behind us", func() bool {
			return len(keys(t, c, "/t10/lock/jobs/")) == 2
		})
		ours.waitEvent(t, "renewed", 20*time.Second)
		require.NotContains(t, next.out.String(), "/t10/lock/jobs/", "etcdctl must not get the lock while we hold it")
		ours.sigs <- syscall.SIGTERM
		require.Equal(t, hold.ExitSIGTERM, ours.exit(t, 10*time.Second))
		proctest.WaitFor(t, 20*time.Second, "etcdctl to get the lock after our release", func() bool {
			return strings.Contains(next.out.String(), "/t10/lock/jobs/")
		})
	})
}
