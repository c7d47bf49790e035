package supervisor

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/hold/local"
	"github.com/octostore-supervisor/supervisor/internal/testkit/etcdtest"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// Issue 32, findings 4 and 6: the interlock's host lock is one name per
// authority and name on the whole host, which another user can bind but not
// block anyone with, and a run blocked by it keeps reading its hold.

// hostWide makes a test build of the supervisor name an explicit hold's host
// lock host-wide, as a release build does (testHostScope).
const hostWide = "OCTOSTORE_SUPERVISOR_TESTHOOK_HOST_WIDE=1"

// Finding 4: nobody binds the host lock name of root's room first, deriving
// it as anyone can (the state directory is on the supervisor's command line).
// Root's supervisor must not take that socket for a run of its own: it leads
// and starts its worker, and says that it passed another user's socket.
// Before: it waited "(interlock)" and exited 20 when its deadline lapsed,
// never starting its worker.
func TestInterlockSquattedByAnotherUserDoesNotBlock(t *testing.T) {
	t.Parallel()
	state := privateDir(t)
	server := "file://" + state
	room := createRoom(t, server)
	real, err := filepath.EvalSymlinks(state)
	require.NoError(t, err)
	key := local.HostKey("file://"+real, hold.KindElection, room)
	startLocalUser(t, nobody, "squat", platform.HostLockName(key))
	uid, known, err := platform.HostLockHolder(key)
	require.NoError(t, err)
	require.True(t, known, "the squatter's socket is not to be found: nothing was tested")
	require.Equal(t, nobody, uid)

	a := startLocal(t, sc{worker: "--term-exits --started-at {dir}/started"}, "election", room, "agent-a",
		"--server", server, "--ttl", "10", "--term-grace", "500ms")
	a.waitEvent("leader", bound)
	workerStarted(t, a)
	require.Contains(t, a.stderr(), "held by uid 65534, neither ours nor root")
	require.NotContains(t, a.stderr(), interlockWait)

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, a.wait(bound), a.stderr())
	require.Equal(t, []string{"leader", "released"}, a.events())
}

// Finding 4: a run held back by the interlock (here by a host lock of our
// own uid, as a previous run of ours whose worker may live holds it) goes on
// reading its hold. Its renewals keep its deadline, so it waits past the
// leader event's budget and starts its worker once the interlock is free;
// a loss while it waits ends it as a loss, with the hold's own terminal line.
// Before: the hold's lines were not read, and the run exited 20 when the
// leader event's deadline lapsed (at 1.75 s here), saying only that.
func TestBlockedRunKeepsReadingItsHold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, kind, start, end string
		freeAfter              time.Duration // 0: the interlock stays held
	}{
		{"lost while blocked", "election", "leader", "emit:lost,term=1,reason=lease_not_current", 0},
		{"freed after the first budget", "lock", "acquired", "forever", 3500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			held, err := platform.OpenHostLock()
			require.NoError(t, err)
			defer held.Close()
			ok, err := platform.TryHostLock(held, local.HostKey(local.ExplicitHoldAuthority, holdKindOf(tc.kind), "room"))
			require.NoError(t, err)
			require.True(t, ok, "the host lock of room is taken already")
			steps := []string{"emit:" + tc.start + ",term=1,budget=3000"}
			for range 12 {
				steps = append(steps, "sleep:400ms", "emit:renewed,term=1,budget=3000")
			}
			r := start(t, sc{kind: tc.kind, hold: append(steps, tc.end), env: []string{hostWide},
				worker: "--term-exits --started-at {dir}/started"})
			if tc.freeAfter == 0 {
				require.Equal(t, 20, r.wait(bound), r.stderr())
				require.Equal(t, []string{"lost"}, r.events(), r.stderr())
				require.Contains(t, r.stderr(), interlockWait)
				require.NotContains(t, r.stderr(), "deadline passed")
				requireNeverRan(t, r)
				return
			}
			time.Sleep(tc.freeAfter)
			require.Empty(t, r.events(), "the worker started while the interlock was held: %s", r.stderr())
			require.NoError(t, held.Close())
			r.waitEvent("acquired", bound)
			require.Greater(t, workerStarted(t, r), r.began.Add(tc.freeAfter).UnixNano())
			require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 143, r.wait(bound), r.stderr())
			require.Equal(t, []string{"acquired", "released"}, r.events())
		})
	}
}

func holdKindOf(kind string) hold.Kind {
	if kind == "lock" {
		return hold.KindLock
	}
	return hold.KindElection
}

// Finding 6: two supervisors of one room whose authority is spelled two ways
// (127.0.0.1 and localhost), each with a private state directory of its own,
// serialize, and so does a supervisor of another user after root's. A leads
// with a TERM-ignoring worker; the authority ends A's lease while that worker
// lives, and B leads at once: on etcd, B campaigns behind A and A's key is
// deleted, which both holds see at once; on the fake server, which answers a
// waiting candidate only when the lease would have run out, A's hold is
// stopped (so A goes on until its deadline), the lease forgotten, and B
// started then. B's worker must start only after A's whole tree is proven
// gone. Before: B's worker started 0.02 s after it led, while A's ran on for
// seconds.
func TestInterlockOneNamePerAuthorityHoweverSpelled(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		uid  uint32
	}{{"http", 0}, {"http, B as nobody", nobody}} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			server := startAuthority(t)
			room := createRoom(t, server)
			handOverSpelledTwice(t, spelledTwice{room: room, a: server, b: strings.Replace(server, "127.0.0.1", "localhost", 1), uidB: b.uid,
				endLease: func(a *run) {
					h, err := holdOf(a.cmd.Process.Pid)
					require.NoError(t, err)
					require.NoError(t, proctest.Signal(h, syscall.SIGSTOP))
					t.Cleanup(func() { _ = proctest.Signal(h, syscall.SIGCONT) })
					expireLease(t, server, room)
				}})
		})
	}
	t.Run("etcd", func(t *testing.T) {
		t.Parallel()
		srv := etcdServer(t)
		c := etcdtest.Start(t, etcdtest.Options{Server: srv})
		server := c.URL("/t32")
		cli := c.Client(t)
		handOverSpelledTwice(t, spelledTwice{room: "room", a: server, b: strings.ReplaceAll(server, "127.0.0.1", "localhost"), env: etcdEnv(srv), bFirst: true,
			endLease: func(*run) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				g, err := cli.Get(ctx, "/t32/election/room/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
				require.NoError(t, err)
				require.NotEmpty(t, g.Kvs)
				_, err = cli.Delete(ctx, string(g.Kvs[0].Key))
				require.NoError(t, err)
			}})
	})
}

// spelledTwice is one hand-over between two spellings a and b of an
// authority (--server).
type spelledTwice struct {
	room, a, b string
	env        []string
	uidB       uint32 // B runs as this user (0: as the test)
	bFirst     bool   // B campaigns before A's lease ends, else it starts after
	endLease   func(a *run)
}

// handOverSpelledTwice runs A on s.a, ends its lease while its TERM-ignoring
// worker lives, and requires B on s.b to start its worker only once that
// worker's tree is gone.
func handOverSpelledTwice(t *testing.T, s spelledTwice) {
	// TTL 12: the hold renews after about 6 s, before the deadline (9.6 s - 2 s - 250 ms).
	common := []string{"--ttl", "12", "--term-grace", "2s"}
	a := startLocal(t, sc{worker: "--ignore-signals --child", env: s.env}, "election", s.room, "agent-a", append([]string{"--server", s.a}, common...)...)
	a.waitEvent("leader", bound)
	waitRecorded(t, a.dir+"/pids", 2)
	aw := pidsIn(a.dir + "/pids")
	startB := func() *run {
		return startLocal(t, sc{worker: "--term-exits --started-at {dir}/started", env: s.env, uid: s.uidB}, "election", s.room, "agent-b", append([]string{"--server", s.b}, common...)...)
	}
	var b *run
	if s.bFirst {
		b = startB()
		b.waitEvent("waiting", bound)
	}

	ended := time.Now()
	s.endLease(a)
	if b == nil {
		b = startB()
	}
	lastAlive := lastSeenAlive(t, aw, time.Time{})
	require.Equal(t, 20, a.wait(bound), a.stderr())
	b.waitEvent("leader", bound)
	started := workerStarted(t, b)
	require.Greater(t, started, lastAlive.UnixNano(), "B's worker started %v after A's lease ended, while A's worker tree was alive %v after it",
		time.Duration(started-ended.UnixNano()), lastAlive.Sub(ended))
	require.Contains(t, b.stderr(), interlockWait, "B led only after A's worker was gone: nothing was tested")
	t.Logf("A's worker tree gone %v after its lease ended; B's worker started %v after that",
		lastAlive.Sub(ended).Round(time.Millisecond), time.Duration(started-lastAlive.UnixNano()).Round(time.Microsecond))

	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, b.wait(bound), b.stderr())
	require.Equal(t, "released", b.events()[len(b.events())-1])
}
