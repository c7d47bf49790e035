package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/contain"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// Issue 10 items 3 and 4: the per-host gate in front of every worker start.

// What a supervisor says while recorded survivors keep its name blocked.
const survivorsWait = "waiting until the processes that survived an earlier failed containment of this name are gone"

// authorityFor returns a --server value and a fresh room on it: the local
// authority in a file:/// directory, or the fake HTTP authority.
func authorityFor(t *testing.T, kind string) (server, room string) {
	t.Helper()
	if kind == "local" {
		server = "file://" + privateDir(t)
	} else {
		server = startAuthority(t)
	}
	return server, createRoom(t, server)
}

// expireLease makes the fake authority forget the room's leader (no-op for
// the local authority, whose lock died with the hold).
func expireLease(t *testing.T, server, room string) {
	t.Helper()
	if strings.HasPrefix(server, "http") {
		post(t, server+"/__control/expire", fmt.Sprintf(`{"election_id":%q}`, room))
	}
}

// A's containment fails (a member frozen by the cgroup v1 freezer ignores
// SIGKILL until thawed): A exits 70 naming the survivor and records it in the
// private state directory it shares with B, C and D. B, which was waiting for
// the room, wins it but starts no worker while the survivor lives; C, started
// afterwards with --acquire-timeout, gives up with exit 11 without ever
// starting its hold; D, started afterwards without one, waits before
// campaigning. Once the survivor is thawed (and so dies of its pending
// SIGKILL), B's worker starts — after the thaw — and the record is gone. The
// same for the local and the HTTP authority: the record is keyed by authority.
func TestFailedContainmentKeepsNameBlocked(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"local", "http"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			freezer := freezerCgroup(t)
			server, room := authorityFor(t, kind)
			xdg := privateDir(t)
			env := []string{"XDG_RUNTIME_DIR=" + xdg}
			flags := []string{"--server", server, "--ttl", "10", "--term-grace", "500ms"}

			a := startLocal(t, sc{worker: "--ignore-signals --child", env: env}, "election", room, "agent-a", flags...)
			a.waitEvent("leader", bound)
			b := startLocal(t, sc{worker: "--term-exits --started-at {dir}/started", env: env}, "election", room, "agent-b", flags...)
			b.waitEvent("waiting", bound)
			child := freezeChild(t, freezer, a.dir)

			// A's worker teardown runs out its proof bound, then A exits 70.
			// Its worker shim, which keeps the survivor below it, stays to
			// kill it for a proof bound of its own once the guardian is gone,
			// and holds A's stderr until then: 10.5 s here when idle, past
			// a flat 15 s bound once on CI's loaded cores.
			termed := time.Now()
			require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 70, a.wait(500*time.Millisecond+2*contain.DefaultProofBound+bound), a.stderr())
			t.Logf("A's stdout and stderr closed %v after its SIGTERM", time.Since(termed).Round(time.Millisecond))
			require.Contains(t, a.stderr(), fmt.Sprintf("survivor: pid %d", child.pid))
			require.Contains(t, a.stderr(), "this name stays blocked on this host until the survivors are gone")
			records, err := filepath.Glob(filepath.Join(xdg, "octostore", "supervised", "*.survivors"))
			require.NoError(t, err)
			require.Len(t, records, 1)

			expireLease(t, server, room)
			proctest.WaitFor(t, bound, "B to wait for the survivor", func() bool {
				return strings.Contains(b.stderr(), survivorsWait)
			})
			require.Contains(t, b.stderr(), fmt.Sprintf("pid %d", child.pid))

			c := startLocal(t, sc{env: env}, "election", room, "agent-c", append([]string{"--acquire-timeout", "1s"}, flags...)...)
			require.Equal(t, 11, c.wait(bound), c.stderr())
			require.Contains(t, c.stderr(), survivorsWait)
			require.Contains(t, c.stderr(), "gave up after --acquire-timeout")
			require.Empty(t, c.events(), "C's hold ran although its name was blocked")

			d := startLocal(t, sc{env: env}, "election", room, "agent-d", flags...)
			proctest.WaitFor(t, bound, "D to wait for the survivor", func() bool {
				return strings.Contains(d.stderr(), survivorsWait)
			})

			_, err = os.Stat(filepath.Join(b.dir, "started"))
			require.True(t, os.IsNotExist(err), "B's worker started beside the survivor")
			require.Empty(t, d.events(), "D campaigned although its name was blocked")
			thawed := time.Now()
			require.NoError(t, os.WriteFile(filepath.Join(freezer, "freezer.state"), []byte("THAWED"), 0o644))
			requireAllDeadWithin(t, a.dir, bound)

			b.waitEvent("leader", bound)
			started := workerStarted(t, b)
			require.Greater(t, started, thawed.UnixNano(), "B's worker started before the survivor could die")
			d.waitEvent("waiting", bound)
			records, err = filepath.Glob(filepath.Join(xdg, "octostore", "supervised", "*.survivors"))
			require.NoError(t, err)
			require.Empty(t, records, "the survivor record outlived the survivor")

			for _, r := range []*run{d, b} {
				require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
				require.Equal(t, 143, r.wait(bound), r.stderr())
			}
			require.Equal(t, "released", b.events()[len(b.events())-1])
		})
	}
}

// A hostile worker SIGSTOPs its supervisor, guardian and hold (HTTP
// authority): no timer runs anywhere, the lease ages out at the authority and
// B's hold leads. B's supervisor must not start its worker while A's may live:
// the stopped processes still hold the interlock, so B waits. Resumed, A
// learns it lost, proves its worker gone and exits 20; only then does B's
// worker start.
func TestStoppedSupervisorKeepsSecondWorkerWaiting(t *testing.T) {
	t.Parallel()
	server, room := authorityFor(t, "http")
	xdg := privateDir(t)
	env := []string{"XDG_RUNTIME_DIR=" + xdg}
	flags := []string{"--server", server, "--ttl", "10"}

	a := startLocal(t, sc{worker: "--term-exits --child", env: env}, "election", room, "agent-a", flags...)
	a.waitEvent("leader", bound)
	b := startLocal(t, sc{worker: "--term-exits --started-at {dir}/started", env: env}, "election", room, "agent-b", flags...)
	b.waitEvent("waiting", bound)
	waitRecorded(t, a.dir+"/pids", 2)

	sup := a.cmd.Process.Pid
	guardian := guardianOf(t, sup)
	h, err := holdOf(sup)
	require.NoError(t, err)
	stopped := []int{sup, guardian, h.Pid}
	for _, pid := range stopped {
		require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
		waitStopped(t, pid, bound)
	}
	resume := func() {
		for i := len(stopped) - 1; i >= 0; i-- {
			_ = syscall.Kill(stopped[i], syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)

	expireLease(t, server, room)
	proctest.WaitFor(t, bound, "B's hold to lead and its supervisor to wait on the interlock", func() bool {
		return strings.Contains(b.stderr(), interlockWait)
	})
	// Resumed, A's guardian may kill the worker before the test looks again:
	// this read is then the last that saw it alive.
	seen := time.Now()
	require.NotEmpty(t, aliveRecorded(pidsIn(a.dir+"/pids")), "A's worker should still run: nothing was tested")
	_, err = os.Stat(filepath.Join(b.dir, "started"))
	require.True(t, os.IsNotExist(err), "B's worker started while A's worker ran")

	aw := pidsIn(a.dir + "/pids")
	resume()
	lastAlive := lastSeenAlive(t, aw, seen)
	require.Equal(t, 20, a.wait(bound), a.stderr())
	b.waitEvent("leader", bound)
	started := workerStarted(t, b)
	require.Greater(t, started, lastAlive.UnixNano(), "B's worker started at %s while A's worker tree was alive at %s",
		time.Unix(0, started).UTC().Format(time.RFC3339Nano), lastAlive.UTC().Format(time.RFC3339Nano))

	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, b.wait(bound), b.stderr())
	require.Equal(t, "released", b.events()[len(b.events())-1])
}
