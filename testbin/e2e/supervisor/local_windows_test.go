package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/hold/local"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// Issue 6 on Windows: the host-local authority through the embedded hold of
// the real supervisor binary (it re-executes itself as the octostore client)
// and the interlock: the supervisor LockFileEx-locks <name>.active before it
// starts its worker and unlocks it only once its worker's job is proven
// empty, so a hand-over never starts the next worker while the previous one
// may still run.

// interlockWaitLine is what a supervisor says when its hold won the room but
// the previous holder's worker is not proven gone yet.
const interlockWaitLine = "waiting until the previous holder's worker is proven gone (interlock)"

var workerProvenEmptyAt = regexp.MustCompile(`(?m)^octostore-supervisor: worker group proven empty at (\S+) \(`)

// fileServer is the --server value of a state directory: file:///C:/dir, the
// form hold's parser turns back into C:\dir.
func fileServer(dir string) string { return "file:///" + filepath.ToSlash(dir) }

// createLocalRoom makes a room with the prebuilt `octostore election create`.
func createLocalRoom(t *testing.T, server string) string {
	t.Helper()
	bin := filepath.Join(os.Getenv("OCTOSTORE_WIN_BIN"), "octostore.exe")
	_, err := os.Stat(bin)
	require.NoError(t, err, "missing test binary")
	cmd := exec.Command(bin, "election", "create", "--server", server, "--json")
	return createdRoom(t, cmd)
}

// startEmbedded runs `octostore-supervisor election --server S --ttl 10 ROOM
// CAND escaper.exe` (the embedded hold: no "-- <hold command>") in its own
// test directory and test job; the worker takes its flags from ESCAPER_ARGS
// and records its processes in {dir}/pids. The environment carries no
// OCTOSTORE_ variable of the test's: an ambient server or token must not
// change what is tested.
func startEmbedded(t *testing.T, server, room, cand, workerFlags string) *run {
	t.Helper()
	dir := tempDir(t)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(strings.ToUpper(kv), "OCTOSTORE_") {
			env = append(env, kv)
		}
	}
	env = append(env, fmt.Sprintf("ESCAPER_ARGS=--pidfile %s --log %s %s", filepath.Join(dir, "pids"), filepath.Join(dir, "log"),
		strings.ReplaceAll(workerFlags, "{dir}", dir)))
	return launch(t, dir, []string{"election", "--server", server, "--ttl", "10", room, cand, bins.esc}, env)
}

var ntdll = windows.NewLazySystemDLL("ntdll.dll")

// suspend freezes every thread of pid (NtSuspendProcess) and returns the
// resume; the test registers the resume as a cleanup too, so a failed
// assertion never leaves a frozen process behind.
func suspend(t *testing.T, pid uint32) (resume func()) {
	t.Helper()
	h, err := windows.OpenProcess(windows.PROCESS_SUSPEND_RESUME, false, pid)
	require.NoError(t, err)
	call := func(name string) error {
		if st, _, _ := ntdll.NewProc(name).Call(uintptr(h)); st != 0 {
			return fmt.Errorf("%s: %w", name, windows.NTStatus(st))
		}
		return nil
	}
	require.NoError(t, call("NtSuspendProcess"))
	resumed := false
	resume = func() {
		if resumed {
			return
		}
		resumed = true
		if err := call("NtResumeProcess"); err != nil {
			t.Errorf("resume process %d: %v", pid, err)
		}
		windows.CloseHandle(h)
	}
	t.Cleanup(resume)
	return resume
}

// terminateInJob ends pid, which must be a member of r's test job, with
// TerminateProcess, and waits until it is gone.
func terminateInJob(t *testing.T, r *run, pid uint32) {
	t.Helper()
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE|windows.SYNCHRONIZE, false, pid)
	require.NoError(t, err)
	defer windows.CloseHandle(h)
	// Checked after the open: the handle names this member, not a process
	// that got its pid later.
	require.True(t, r.inJob(pid), "process %d is not in the test's job", pid)
	require.NoError(t, windows.TerminateProcess(h, 137))
	ev, err := windows.WaitForSingleObject(h, uint32(long/time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, uint32(windows.WAIT_OBJECT_0), ev, "process %d did not end", pid)
}

// startedNs reads escaper's --started-at file (unix ns of its main).
func startedNs(t *testing.T, path string) int64 {
	t.Helper()
	var b []byte
	// escaper renames the file into place with its line in it.
	proctest.WaitFor(t, long, "the worker's start time", func() bool {
		b, _ = os.ReadFile(path)
		return bytes.HasSuffix(b, []byte("\n"))
	})
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err, "%q", b)
	return ns
}

// Two supervisors with the embedded local hold contend for one room in a
// shared state directory: exactly one leads (its worker runs), the other
// waits (no worker). The leader's hold is then killed with TerminateProcess
// while its supervisor is frozen, standing in for a worker whose teardown
// takes a while (Wine cannot deliver the console event that would give a real
// worker its grace): the room passes to the second hold at once, but the
// second supervisor must wait on the interlock while the first worker's tree
// is still alive, and may start its worker only after the first supervisor,
// resumed, proved that tree gone. Every process of both test jobs is gone at
// the end.
func TestLocalEmbeddedHandoverWaitsForInterlock(t *testing.T) {
	state := filepath.Join(tempDir(t), "state")
	require.NoError(t, os.Mkdir(state, 0o700))
	server := fileServer(state)
	room := createLocalRoom(t, server)

	a := startEmbedded(t, server, room, "agent-a", "--term-exits --child")
	a.waitEvent("leader", long)
	aw := a.waitRoles("worker", "child")
	b := startEmbedded(t, server, room, "agent-b", "--term-exits --started-at {dir}/started")
	b.waitEvent("waiting", long)

	// Exactly one leads: A's hold holds the room, and only A's worker runs.
	store, err := local.Open(server, nil)
	require.NoError(t, err)
	defer store.Close()
	require.Equal(t, state, store.Dir())
	rep, err := store.Status(context.Background(), hold.KindElection, room)
	require.NoError(t, err)
	st := rep.(local.Status)
	require.True(t, st.Held)
	require.NotNil(t, st.Holder)
	require.Equal(t, "agent-a", st.Holder.CandidateID)
	require.Equal(t, a.line("leader")["term"], float64(st.Holder.Term))
	holdA := uint32(st.Holder.PID)
	require.True(t, a.inJob(holdA), "the room's holder (pid %d) is not A's hold", holdA)
	require.NotContains(t, []uint32{a.proc.Pid, aw["worker"], aw["child"]}, holdA)
	require.Equal(t, []string{"leader"}, a.events())
	require.Equal(t, []string{"waiting"}, b.events())
	require.Empty(t, b.roles(), "the waiting supervisor started a worker")

	resumeA := suspend(t, a.proc.Pid)
	terminateInJob(t, a, holdA)
	killed := time.Now()
	proctest.WaitFor(t, long, "B's supervisor to wait on the interlock", func() bool {
		return strings.Contains(b.stderr(), interlockWaitLine)
	})
	won := time.Since(killed)
	// B's hold won the room while A's worker tree still ran: only the
	// interlock stands between it and a second worker.
	require.True(t, a.inJob(aw["worker"]) && a.inJob(aw["child"]), "A's worker tree ended while A's supervisor was frozen")
	_, err = os.Stat(filepath.Join(b.dir, "started"))
	require.ErrorIs(t, err, os.ErrNotExist, "B's worker started while A's worker ran")
	require.Equal(t, []string{"waiting"}, b.events())
	resumeA()

	require.Equal(t, 70, a.wait(long), a.stderr())
	require.Contains(t, a.stderr(), "without a terminal event")
	require.Equal(t, []string{"leader"}, a.events(), "a supervisor whose hold died prints no terminal line")
	m := workerProvenEmptyAt.FindStringSubmatch(a.stderr())
	require.NotNil(t, m, "no proof of an empty worker group on A's stderr:\n%s", a.stderr())
	proven, err := time.Parse(time.RFC3339Nano, m[1])
	require.NoError(t, err)
	require.False(t, a.inJob(aw["worker"]) || a.inJob(aw["child"]), "A's worker tree outlived A's supervisor")

	b.waitEvent("leader", long)
	started := startedNs(t, filepath.Join(b.dir, "started"))
	require.Greater(t, started, proven.UnixNano(), "B's worker started at %s, before A's worker group was proven empty at %s",
		time.Unix(0, started).UTC().Format(time.RFC3339Nano), proven.Format(time.RFC3339Nano))
	require.Greater(t, b.line("leader")["term"].(float64), a.line("leader")["term"].(float64))
	rep, err = store.Status(context.Background(), hold.KindElection, room)
	require.NoError(t, err)
	st = rep.(local.Status)
	require.Equal(t, "agent-b", st.Holder.CandidateID)
	t.Logf("B waited on the interlock %v after A's hold was killed; A proven empty at %s; B's worker started %v later",
		won.Round(time.Millisecond), proven.Format(time.RFC3339Nano), time.Duration(started-proven.UnixNano()).Round(time.Microsecond))

	// End B the same way (no console event reaches it under Wine): its
	// worker is proven gone, no terminal line, 70. launch's cleanup then
	// proves both test jobs empty.
	bw := b.waitRoles("worker")
	terminateInJob(t, b, uint32(st.Holder.PID))
	require.Equal(t, 70, b.wait(long), b.stderr())
	require.Equal(t, []string{"waiting", "leader"}, b.events())
	require.Regexp(t, workerProvenEmptyAt, b.stderr())
	require.False(t, slices.Contains(b.aliveBesidesSupervisor(), bw["worker"]))
}
