package supervisor

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/etcdtest"
	"github.com/octostore-supervisor/supervisor/internal/testkit/fencelog"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// Issue 13: one election on a three-member etcd cluster, handed over 200 times
// among four supervisors with the embedded hold. Every leader's worker
// (testbin/fenceworker) appends its fencing term to a fenced log every 10 ms,
// and the log's store rejects a term lower than one it already accepted. A
// quarter of the hand-overs SIGKILL the holding hold: its lease lapses by
// time, and the successor may lead only after the TTL. The others SIGTERM the
// holding supervisor: it contains its worker, then its hold revokes the lease,
// and the successor leads at once. The contender that ended starts again, so
// four always contend.

const (
	etcdHandoverCount = 200
	// etcdAgentTTL is the shortest TTL an election accepts (5 s): every SIGKILL
	// hand-over waits for the killed hold's lease to run out.
	etcdAgentTTL   = 5
	etcdAgentGrace = 200 * time.Millisecond
	// etcdContenders always contend for the one election.
	etcdContenders = 4
)

// etcdServer is the server build the supervised etcd tests and benchmarks
// run against: the pinned 3.6, or the build OCTOSTORE_TEST_ETCD_SERVER names
// (debian). One build only: a run costs minutes of CI's two cores, and
// hold/etcd's own tests cover every build.
func etcdServer(t testing.TB) etcdtest.Server {
	t.Helper()
	want := cmp.Or(os.Getenv("OCTOSTORE_TEST_ETCD_SERVER"), "3.6")
	var names []string
	for _, s := range etcdtest.Servers(t) {
		if s.Name == want {
			return s
		}
		names = append(names, s.Name)
	}
	t.Fatalf("OCTOSTORE_TEST_ETCD_SERVER=%s names no server build; the builds are %s", want, strings.Join(names, ", "))
	return etcdtest.Server{}
}

// etcdAgent is one `octostore-supervisor election` with the embedded hold on
// the cluster at server, started as a user would start it, with env added to
// a clean environment.
func etcdAgent(srv etcdtest.Server, server, room, cand, worker string, env ...string) *exec.Cmd {
	cmd := exec.Command(bins.sup, "election", "--server", server, "--ttl", strconv.Itoa(etcdAgentTTL),
		"--term-grace", etcdAgentGrace.String(), room, cand, worker)
	cmd.Env = localEnv(append(etcdEnv(srv), env...)...)
	return cmd
}

// etcdEnv is what a client of srv needs in its environment: Debian's 3.4.23
// is below the version floor, which tests may override.
func etcdEnv(srv etcdtest.Server) []string {
	if srv.Name == "debian" {
		return []string{"OCTOSTORE_ETCD_ALLOW_OLD_SERVER=1"}
	}
	return nil
}

// fenceWorkerScript writes an executable in dir that runs fenceworker on log
// with role: a supervisor's worker is one path without arguments.
func fenceWorkerScript(t testing.TB, dir, log, role string) string {
	t.Helper()
	path := filepath.Join(dir, "worker-"+role)
	script := fmt.Sprintf("#!/bin/sh\nexec '%s' '%s' '%s'\n", bins.fenceworker, log, role)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// etcdContender is one supervisor of the hand-over test.
type etcdContender struct {
	r    *run
	cand string
	// ended is how the test ended it: "term" (SIGTERM to the supervisor),
	// "kill" (SIGKILL to its hold), "stop" (SIGTERM to a waiter at the end);
	// "" when it ended by itself.
	ended string
}

func TestEtcdHandovers200Among4Contenders(t *testing.T) {
	// Not parallel, and only in the suite's default pass: four supervisors and
	// three etcd members are load enough for two cores, and what is tested is
	// the authority's hand-over, not a containment backend (the local
	// hand-over test runs under both).
	defaultPassOnly(t)
	h := newEtcdHandovers(t)
	began := time.Now()
	for n := range etcdHandoverCount {
		h.handOver(h.holder(), n%4 == 3)
	}
	h.stopAll()
	elapsed := time.Since(began)

	// The oracle first: it is the property; the supervisors' accounts next.
	margin := h.checkFenceLog(h.leaderTerms())
	h.checkSupervisors()
	t.Logf("%d hand-overs (%d by SIGKILL of the hold) among %d contenders in %v; takeover after SIGTERM %s, after SIGKILL %s; a predecessor proven gone %s before its successor's first write; %d supervisors lost authority by themselves",
		etcdHandoverCount, etcdHandoverCount/4, etcdContenders, elapsed.Round(time.Millisecond),
		spread(h.takeover["term"]), spread(h.takeover["kill"]), spread(margin), h.spontaneous)
}

// etcdHandovers drives the test: slots holds the current supervisor of each
// candidate, all every supervisor ever started.
type etcdHandovers struct {
	t                  *testing.T
	srv                etcdtest.Server
	server, room, mark string
	work               string
	log                *etcdtest.FenceLog
	tail               fenceTail
	slots              [etcdContenders]*etcdContender
	workers            [etcdContenders]string // each candidate's worker
	all                []*etcdContender
	// takeover: from the holder's end (signal sent) to the test seeing its
	// successor's leader line and its worker's first write, by how it ended.
	takeover    map[string][]time.Duration
	lastEnd     time.Time
	lastHow     string
	spontaneous int
}

func newEtcdHandovers(t *testing.T) *etcdHandovers {
	srv := etcdServer(t)
	c := etcdtest.Start(t, etcdtest.Options{Server: srv})
	h := &etcdHandovers{t: t, srv: srv, server: c.URL("/octostore"), mark: newMark(t), work: t.TempDir(),
		log: etcdtest.NewFenceLog(t), takeover: map[string][]time.Duration{}}
	h.tail.path = h.log.Path()
	h.room = createRoom(t, h.server, etcdEnv(srv)...)
	// Registered after the cluster's cleanup, so it runs before it: every
	// hold and worker the test started is gone, whatever the verdict (each
	// supervisor's own proofs are launch's).
	t.Cleanup(func() { requireNoMarked(t, h.mark) })
	for i := range h.slots {
		h.workers[i] = fenceWorkerScript(t, h.work, h.log.Path(), fmt.Sprintf("c%d", i))
		h.start(i)
	}
	return h
}

// start runs a new supervisor for candidate i in its slot.
func (h *etcdHandovers) start(i int) {
	cand := fmt.Sprintf("c%d", i)
	dir := h.t.TempDir()
	cmd := etcdAgent(h.srv, h.server, h.room, cand, h.workers[i], "TMPDIR="+dir, envMark+"="+h.mark)
	r := &run{t: h.t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1, gsess: make(chan platform.Proc, 1)}
	c := &etcdContender{r: launch(h.t, r), cand: cand}
	h.slots[i] = c
	h.all = append(h.all, c)
}

// holder waits until one contender leads and its worker has written, and
// returns its slot. A contender that ended by itself (lost or
// uncertain: a renewal starved on two shared cores) is started again.
func (h *etcdHandovers) holder() int {
	h.t.Helper()
	slot := -1
	proctest.WaitFor(h.t, 2*time.Minute, "a leader whose worker writes", func() bool {
		h.tail.poll(h.t)
		for i, c := range h.slots {
			if exited(c.r) {
				h.t.Logf("%s ended by itself, exit %d: %s", c.cand, c.r.code, c.r.out.String())
				h.spontaneous++
				h.start(i)
				continue
			}
			if lt, ok := leaderTerm(c.r); ok && h.tail.started[lt] {
				slot = i
				return true
			}
		}
		return false
	})
	if h.lastHow != "" {
		h.takeover[h.lastHow] = append(h.takeover[h.lastHow], time.Since(h.lastEnd))
	}
	return slot
}

// handOver ends the holder in slot i, by SIGKILL of its hold or SIGTERM to
// its supervisor, waits for its supervisor to exit and starts the candidate
// again.
func (h *etcdHandovers) handOver(i int, kill bool) {
	h.t.Helper()
	c := h.slots[i]
	h.lastEnd = time.Now()
	if kill {
		c.ended = "kill"
		killHold(h.t, c.r)
	} else {
		c.ended = "term"
		require.NoError(h.t, c.r.cmd.Process.Signal(syscall.SIGTERM))
	}
	h.lastHow = c.ended
	c.r.wait(bound)
	h.start(i)
}

// stopAll ends the test's last contenders: the waiters first, so none of
// them can become leader meanwhile, then the holder.
func (h *etcdHandovers) stopAll() {
	h.t.Helper()
	i := h.holder()
	h.lastHow = ""
	for j, c := range h.slots {
		if j != i {
			c.ended = "stop"
			require.NoError(h.t, c.r.cmd.Process.Signal(syscall.SIGTERM))
			c.r.wait(bound)
		}
	}
	c := h.slots[i]
	c.ended = "term"
	require.NoError(h.t, c.r.cmd.Process.Signal(syscall.SIGTERM))
	c.r.wait(bound)
}

// leaderTerms maps the term of every leader line to its supervisor; no term
// leads twice.
func (h *etcdHandovers) leaderTerms() map[uint64]*etcdContender {
	terms := map[uint64]*etcdContender{}
	for _, c := range h.all {
		if lt, ok := leaderTerm(c.r); ok {
			require.Nil(h.t, terms[lt], "term %d led twice", lt)
			terms[lt] = c
		}
	}
	return terms
}

// checkSupervisors checks each supervisor's own account of how it ended.
func (h *etcdHandovers) checkSupervisors() {
	t := h.t
	count := map[string]int{}
	for _, c := range h.all {
		r := c.r
		count[c.ended]++
		// Waiting and renewed lines come as often as the load makes a
		// renewal fail or the holder live on; the rest is the account.
		evs := slices.DeleteFunc(r.events(), func(e string) bool { return e == "waiting" || e == "renewed" })
		switch c.ended {
		case "kill":
			require.Equal(t, 70, r.code, "%s: its hold was killed; stderr:\n%s", c.cand, r.stderr())
			require.Contains(t, r.stderr(), "without a terminal event", c.cand)
			require.Equal(t, []string{"leader"}, evs, c.cand)
		case "term":
			require.Equal(t, 128+int(syscall.SIGTERM), r.code, "%s; stderr:\n%s", c.cand, r.stderr())
			require.Equal(t, []string{"leader", "released"}, evs, c.cand)
			require.Equal(t, true, r.line("released")["containment"].(map[string]any)["proven_empty"], c.cand)
		case "stop":
			require.Equal(t, 128+int(syscall.SIGTERM), r.code, "%s; stderr:\n%s", c.cand, r.stderr())
			require.Empty(t, evs, "%s waited and was stopped", c.cand)
		default:
			require.Equal(t, 20, r.code, "%s ended by itself; stderr:\n%s", c.cand, r.stderr())
			require.Len(t, evs, 2, c.cand)
			require.Contains(t, []string{"lost", "uncertain"}, evs[1], c.cand)
			require.Equal(t, true, r.line(evs[1])["containment"].(map[string]any)["proven_empty"], c.cand)
		}
	}
	require.Equal(t, etcdHandoverCount/4, count["kill"], "hand-overs by SIGKILL of the hold")
	require.Equal(t, etcdHandoverCount-etcdHandoverCount/4+1, count["term"], "hand-overs by SIGTERM, and the last holder")
	require.Equal(t, etcdContenders-1, count["stop"], "waiters stopped at the end")
}

// checkFenceLog is the oracle: no write of a deposed term accepted, each
// term's writes one run of the log in increasing term order, every term that
// wrote reported by a supervisor's leader line, and each predecessor's worker
// proven gone by its supervisor before its successor's first write. It
// returns by how much, for each hand-over.
func (h *etcdHandovers) checkFenceLog(terms map[uint64]*etcdContender) []time.Duration {
	t := h.t
	h.log.RequireNoRejects(t)
	h.log.RequireDisjointTerms(t)
	first := map[uint64]time.Duration{}
	var order []uint64
	for _, e := range h.log.Entries(t) {
		if _, seen := first[e.Term]; !seen {
			first[e.Term] = e.Boot
			order = append(order, e.Term)
		}
	}
	require.GreaterOrEqual(t, len(order), etcdHandoverCount+1, "terms that wrote")
	toBoot := wallToBoot(t)
	var margin []time.Duration
	for i, term := range order {
		c := terms[term]
		require.NotNil(t, c, "a worker wrote with term %d, which no supervisor reported", term)
		if i == 0 {
			continue
		}
		prev := terms[order[i-1]]
		empty := toBoot(provenEmpty(t, prev.r))
		require.Less(t, empty, first[term], "%s's worker (term %d) was proven gone %v after %s's worker (term %d) first wrote",
			prev.cand, order[i-1], empty-first[term], c.cand, term)
		margin = append(margin, first[term]-empty)
	}
	return margin
}

// wallToBoot converts a wall-clock time (a supervisor's proven-empty stamp)
// to CLOCK_BOOTTIME (the fenced log's clock), by the offset between two
// adjacent readings: both advance at the same rate, and the readings are
// microseconds apart.
func wallToBoot(t *testing.T) func(time.Time) time.Duration {
	before := time.Now()
	boot, err := fencelog.Now()
	require.NoError(t, err)
	after := time.Now()
	wall := before.UnixNano() + (after.UnixNano()-before.UnixNano())/2
	offset := wall - boot.Nanoseconds()
	return func(w time.Time) time.Duration { return time.Duration(w.UnixNano() - offset) }
}

// leaderTerm is the term of r's leader line, if it printed one.
func leaderTerm(r *run) (uint64, bool) {
	for _, l := range r.out.Lines() {
		var m struct {
			Event string `json:"event"`
			Term  uint64 `json:"term"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Event == "leader" {
			return m.Term, true
		}
	}
	return 0, false
}

// fenceTail follows the fenced log as it grows and collects the terms whose
// worker has written its start line. It reads only what was appended since
// its last look: the log grows by a hundred lines a second.
type fenceTail struct {
	path    string
	off     int64
	started map[uint64]bool
}

func (f *fenceTail) poll(t testing.TB) {
	t.Helper()
	file, err := os.Open(f.path)
	require.NoError(t, err)
	defer file.Close()
	b, err := io.ReadAll(io.NewSectionReader(file, f.off, 1<<40))
	require.NoError(t, err)
	b = b[:bytes.LastIndexByte(b, '\n')+1] // a line still being written waits
	es, err := fencelog.Parse(b)
	require.NoError(t, err)
	f.off += int64(len(b))
	if f.started == nil {
		f.started = map[uint64]bool{}
	}
	for _, e := range es {
		if e.What == "start" {
			f.started[e.Term] = true
		}
	}
}

// spread is "min W, p50 X, max Y" of ds.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	return fmt.Sprintf("min %v, p50 %v, max %v", slices.Min(ds).Round(time.Millisecond),
		pct(ds, 50).Round(time.Millisecond), slices.Max(ds).Round(time.Millisecond))
}
