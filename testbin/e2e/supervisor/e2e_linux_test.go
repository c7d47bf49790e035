package supervisor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// startAuthority runs the fake OctoStore server on loopback and returns its URL.
func startAuthority(t *testing.T) string {
	t.Helper()
	return proctest.StartServer(t, bins.authority, "--listen", "127.0.0.1:0", "--token", "t-e2e")
}

func post(t *testing.T, url, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "POST %s", url)
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return m
}

// Issue 3, section 5 (the reference's two-supervisor smoke,
// docs/protocol.md "Hold scenarios"): two supervisors, each running the real
// `octostore election hold` against the authority, with real workers. Exactly
// one leads, the other waits; when the leader's lease is taken away, the first
// supervisor proves its worker tree gone and exits 20 while the second takes
// over. Every line both print passed the supervisor's validation, and no
// capability leaks into any output.
func TestEndToEndTwoSupervisorsRealHold(t *testing.T) {
	t.Parallel()
	url := startAuthority(t)
	room := post(t, url+"/elections", "")["election_id"].(string)
	hold := func(candidate string) []string {
		return []string{bins.octostore, "election", "hold", room, "--candidate", candidate, "--ttl", "8", "--json", "--server", url}
	}
	a := startRaw(t, sc{worker: "--term-exits --grandchild-setsid"}, "election", room, "agent-a", hold("agent-a"))
	a.waitEvent("leader", 10*time.Second)
	b := startRaw(t, sc{worker: "--term-exits --child"}, "election", room, "agent-b", hold("agent-b"))
	b.waitEvent("waiting", 10*time.Second)
	require.Equal(t, []string{"leader"}, a.events())
	waitRecorded(t, a.dir+"/pids", 3)

	// The authority forgets the leader: its next renewal proves the loss.
	post(t, url+"/__control/expire", fmt.Sprintf(`{"election_id":%q}`, room))
	require.Equal(t, 20, a.wait(bound), a.stderr())
	require.Equal(t, []string{"leader", "lost"}, a.events())
	require.Equal(t, true, a.line("lost")["containment"].(map[string]any)["proven_empty"])
	require.Empty(t, aliveRecorded(pidsIn(a.dir+"/pids")), "a's worker tree outlived its authority")

	b.waitEvent("leader", 15*time.Second)
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, b.wait(bound), b.stderr())
	evs := b.events()
	require.Equal(t, "leader", evs[len(evs)-2])
	require.Equal(t, "released", evs[len(evs)-1])
	require.Greater(t, b.line("leader")["term"].(float64), a.line("leader")["term"].(float64))
	for _, r := range []*run{a, b} {
		all := r.out.String() + r.stderr()
		require.NotContains(t, all, "leader_token")
		require.NotContains(t, all, "t-e2e")
	}
}

// startRaw is start with an arbitrary hold command line (not fakehold).
func startRaw(t *testing.T, s sc, kind, name, cand string, holdArgv []string) *run {
	t.Helper()
	dir := t.TempDir()
	worker := filepath.Join(dir, "worker.sh")
	script := fmt.Sprintf("#!/bin/sh\nexec '%s' --pidfile '%s/pids' --log '%s/log' %s\n", bins.esc, dir, dir, strings.ReplaceAll(s.worker, "{dir}", dir))
	require.NoError(t, os.WriteFile(worker, []byte(script), 0o755))
	args := append([]string{kind, name, cand, worker, "--"}, holdArgv...)
	cmd := exec.Command(bins.sup, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "OCTOSTORE_TOKEN=t-e2e")
	r := &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1, gsess: make(chan platform.Proc, 1), sc: s}
	return launch(t, r)
}

// The same for a lock: two supervisors around the real `octostore lock hold`;
// one acquires, the other waits (held); when the authority expires the lease,
// the holder proves its worker tree gone and exits 20 while the waiter
// acquires. The bearer token reaches the holds (OCTOSTORE_TOKEN) but never a
// worker or any output.
func TestEndToEndLockRealHold(t *testing.T) {
	t.Parallel()
	url := startAuthority(t)
	name := "repo/octostore/issue-7"
	// TTL 8: the supervisor's deadline (budget 6.4 s - grace - 250 ms) must fall after
	// the hold's first renewal (about TTL/2); a TTL of 4 puts it before.
	hold := []string{bins.octostore, "lock", "hold", name, "--ttl", "8", "--json", "--server", url}
	a := startRaw(t, sc{worker: "--term-exits --grandchild-setsid --env-out {dir}/env"}, "lock", name, "-", hold)
	a.waitEvent("acquired", 10*time.Second)
	b := startRaw(t, sc{worker: "--term-exits --child"}, "lock", name, "-", hold)
	b.waitEvent("waiting", 10*time.Second)
	waitRecorded(t, a.dir+"/pids", 3)

	post(t, url+"/__control/expire", fmt.Sprintf(`{"lock":%q}`, name))
	require.Equal(t, 20, a.wait(bound), a.stderr())
	evs := a.events()
	require.Equal(t, "lost", evs[len(evs)-1], "%v", evs)
	require.Empty(t, aliveRecorded(pidsIn(a.dir+"/pids")), "a's worker tree outlived its lease")

	b.waitEvent("acquired", 15*time.Second)
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, b.wait(bound), b.stderr())
	require.Equal(t, "released", b.events()[len(b.events())-1])
	require.Greater(t, b.line("acquired")["term"].(float64), a.line("acquired")["term"].(float64))

	env, err := os.ReadFile(filepath.Join(a.dir, "env"))
	require.NoError(t, err)
	require.NotContains(t, string(env), "t-e2e", "the bearer token reached the worker")
	for _, r := range []*run{a, b} {
		require.NotContains(t, r.out.String()+r.stderr(), "t-e2e")
	}
}
