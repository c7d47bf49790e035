package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// The subcommands run, doctor and sweep of the supervisor binary.

// `run` passes the command's exit status through, and 128+signal when the
// command was killed by a signal.
func TestRunExitStatusPassthrough(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, c := range []struct {
		name, script string
		code         int
	}{
		{"exit 0", "exit 0", 0},
		{"exit 3", "exit 3", 3},
		{"SIGKILLed", "kill -KILL $$", 137},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := startCLI(t, t.TempDir(), 0, "run", "--", "/bin/sh", "-c", c.script)
			require.Equal(t, c.code, r.wait(bound), r.stderr())
		})
	}
}

// A program that exits at once is noticed: `run` returns its status, and a
// supervised worker's exit ends the run with the hold's release (exit 0), not at
// the deadline. The guardian takes the first message from a shim after a start
// request for the reply, so the shim must reply before it reports an exit; when
// it reported a program already gone first, the exit was lost: `run` waited
// forever, the supervisor until its deadline. 48 runs each, 8 at a time as they
// finish (a CI runner's load), where a program often ends before the reply.
func TestRunProgramThatExitsAtOnce(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	const n, lanes = 48, 8
	// many starts n runs, at most lanes at a time, each given 5 s (a hung one
	// frees its lane then), and returns their exit codes; -1 means still running
	// after the bound, and those are killed so start's end-of-test proofs apply.
	many := func(t *testing.T, startOne func() *run) ([]int, []*run) {
		var rs []*run
		lane := make(chan struct{}, lanes)
		for range n {
			lane <- struct{}{}
			r := startOne()
			rs = append(rs, r)
			go func() {
				select {
				case <-r.done:
				case <-time.After(5 * time.Second):
				}
				<-lane
			}()
		}
		codes := make([]int, len(rs))
		deadline := time.Now().Add(bound)
		for i, r := range rs {
			select {
			case <-r.done:
				codes[i] = r.code
			case <-time.After(time.Until(deadline)):
				codes[i] = -1
				_ = r.cmd.Process.Kill()
				<-r.done
			}
		}
		return codes, rs
	}
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		codes, _ := many(t, func() *run { return startCLI(t, t.TempDir(), 0, "run", "--", "/bin/sh", "-c", "exit 7") })
		require.Equal(t, slices.Repeat([]int{7}, n), codes, "-1: still running %v after the command exited", bound)
	})
	t.Run("supervised worker", func(t *testing.T) {
		t.Parallel()
		codes, rs := many(t, func() *run {
			dir := t.TempDir()
			worker := filepath.Join(dir, "worker.sh")
			require.NoError(t, os.WriteFile(worker, []byte("#!/bin/sh\nexit 0\n"), 0o755))
			return startCLI(t, dir, 0, "election", "room", "agent", worker, "--",
				bins.hold, "--pidfile", filepath.Join(dir, "hold.pids"), "emit:leader,term=1,budget=5000")
		})
		require.Equal(t, slices.Repeat([]int{0}, n), codes, "20: the worker's exit went unnoticed until the deadline")
		for _, r := range rs {
			require.Equal(t, []string{"leader", "released"}, r.events())
			require.EqualValues(t, 0, r.line("released")["worker_exit_code"])
		}
	})
}

// `run` of a command that leaves a setsid daemon behind exits with the
// command's status, and by the time it returns the daemon (and everything else
// the command started) is dead, the cgroup proved empty and its directory
// removed; the --json summary says so.
func TestRunKillsWhatTheCommandLeftBehind(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	dir := t.TempDir()
	r := startCLI(t, dir, 0, "run", "--json", "--", bins.esc, "--pidfile", filepath.Join(dir, "pids"),
		"--grandchild-setsid", "--exit", "0", "--exit-after", "300ms")
	require.Equal(t, 0, r.wait(bound), r.stderr())
	recs := pidsIn(filepath.Join(dir, "pids"))
	require.True(t, slices.ContainsFunc(recs, func(rec recorded) bool { return rec.role == "daemon" }),
		"the daemon never recorded itself: %v", recs)
	require.Empty(t, aliveRecorded(recs), "alive when run returned")

	sum := r.line("run")
	require.EqualValues(t, 1, sum["schema_version"])
	require.Equal(t, "octostore-supervisor", sum["source"])
	require.EqualValues(t, 0, sum["exit_code"])
	require.Nil(t, sum["timed_out"], "timed_out appears only when the timeout fired")
	cont, ok := sum["containment"].(map[string]any)
	require.True(t, ok, "no containment object: %s", r.out.String())
	require.Equal(t, "cgroup", cont["backend"])
	require.Equal(t, true, cont["proven_empty"])
	require.GreaterOrEqual(t, num(cont, "killed"), float64(1), "the daemon was found and killed")
	require.GreaterOrEqual(t, num(cont, "duration_ms"), float64(0))
	require.Nil(t, cont["survivors"])

	requireNoRunDir(t, runParentOf(t, r), r.cmd.Process.Pid)
}

// SIGTERM to `run` reaches every process in the container - the main process and
// the two escapers it started in the background - while the main process still
// runs, and `run` then exits with the command's own status (5), not 143. The run
// lives in its own cgroup, named after the supervisor and the guardian, whose
// worker leaf holds all three; the directory is gone afterwards.
func TestRunForwardsSIGTERMToTheContainer(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	dir := t.TempDir()
	esc := fmt.Sprintf("'%s' --pidfile '%s/pids' --log '%s/log' --term-exits", bins.esc, dir, dir)
	// The main process can only get past its loop, and exit 5, once both
	// escapers have exited normally (status < 128): with --term-exits that takes
	// a TERM, and run's own teardown TERMs only after the main process exited.
	script := fmt.Sprintf(`#!/bin/sh
trap 'echo "trapped $$" >> "%[1]s/log"' TERM
echo "$$ $(cut -d' ' -f22 /proc/$$/stat) main" >> "%[1]s/pids"
%[2]s & a=$!
%[2]s & b=$!
for p in $a $b; do
	until wait $p; [ $? -lt 128 ]; do :; done
done
echo "exiting $$" >> "%[1]s/log"
exit 5
`, dir, esc)
	mainSh := filepath.Join(dir, "main.sh")
	require.NoError(t, os.WriteFile(mainSh, []byte(script), 0o755))

	r := startCLI(t, dir, 0, "run", "--json", "--", mainSh)
	recs := waitPidLines(t, filepath.Join(dir, "pids"), 3, bound)
	sup := r.cmd.Process.Pid
	parent := runParentOf(t, r)
	g := guardianOf(t, sup)

	// The run's cgroup: one directory named after the supervisor and guardian
	// (pid and start time each), whose worker leaf holds every process.
	runs := runDirsOf(t, parent, sup)
	require.Len(t, runs, 1, "run directories of supervisor %d", sup)
	supStat, err := proctest.Stat(sup)
	require.NoError(t, err)
	gStat, err := proctest.Stat(g)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("run-%d.%d-%d.%d", sup, supStat.StartTicks, g, gStat.StartTicks), runs[0])
	procs, err := os.ReadFile(filepath.Join(parent, runs[0], "worker", "cgroup.procs"))
	require.NoError(t, err)
	for _, rec := range recs {
		require.Contains(t, strings.Fields(string(procs)), strconv.Itoa(rec.pid), "%s is not in the worker leaf", rec.role)
	}

	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 5, r.wait(bound), r.stderr())
	require.EqualValues(t, 5, r.line("run")["exit_code"])
	require.Empty(t, aliveRecorded(recs))

	log, err := os.ReadFile(filepath.Join(dir, "log"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	var mainRec recorded
	for _, rec := range recs {
		switch rec.role {
		case "main":
			mainRec = rec
		case "worker":
			require.Contains(t, lines, fmt.Sprintf("stopped %d", rec.pid), "escaper %d never got the TERM", rec.pid)
		}
	}
	require.Contains(t, lines, fmt.Sprintf("trapped %d", mainRec.pid), "the main process never got the TERM")
	require.Equal(t, fmt.Sprintf("exiting %d", mainRec.pid), lines[len(lines)-1])

	requireNoRunDir(t, parent, sup)
}

// A forwarded signal reaches each process in the container once. Under the cgroup
// backend the guardian signals the tree below the worker's shim and then the
// members of the worker leaf; a process reached both ways (all of them, usually)
// must not be signalled twice, or a command that takes a second Ctrl-C as "force
// quit" aborts instead of shutting down. Ten runs per backend, each counting the
// TERMs its main process handles.
func TestRunForwardsEachSignalOnce(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, backend := range []string{"cgroup", "process-group"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			for i := range 10 {
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					t.Parallel()
					requireSignalledOnce(t, "--containment", backend)
				})
			}
		})
	}
}

// requireSignalledOnce runs a command under `run` with flags, sends run one
// SIGTERM and requires that the command handled exactly one. The main process
// waits in the wait builtin, which a trapped TERM interrupts at once; it then
// lingers 300 ms, long enough for a duplicate to be handled too, and exits 5.
func requireSignalledOnce(t *testing.T, flags ...string) {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
trap 'echo "trapped $$" >> "%[1]s/log"; got=1' TERM
echo "$$ $(cut -d' ' -f22 /proc/$$/stat) main" >> "%[1]s/pids"
'%[2]s' --pidfile '%[1]s/pids' --ignore-signals &
while [ -z "$got" ]; do wait; done
sleep 0.3
exit 5
`, dir, bins.esc)
	mainSh := filepath.Join(dir, "main.sh")
	require.NoError(t, os.WriteFile(mainSh, []byte(script), 0o755))
	r := startCLI(t, dir, 0, slices.Concat([]string{"run"}, flags, []string{"--term-grace", "100ms", "--", mainSh})...)
	waitRecorded(t, filepath.Join(dir, "pids"), 2)
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 5, r.wait(bound), r.stderr())
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(log), "trapped"), "one SIGTERM to run, handled this often by the command:\n%s", log)
}

// --timeout stops a command that ignores TERM: TERM, the grace, then KILL; run
// exits promptly with the main process's status (137) and says timed_out, and
// its containment says why the tree ended (limit_hit timeout) and the signal
// that ended the main process (issue 33).
func TestRunTimeout(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	dir := t.TempDir()
	r := startCLI(t, dir, 0, "run", "--json", "--timeout", "1s", "--term-grace", "200ms", "--",
		bins.esc, "--pidfile", filepath.Join(dir, "pids"), "--ignore-signals", "--child")
	waitRecorded(t, filepath.Join(dir, "pids"), 2)
	require.Len(t, runDirsOf(t, runParentOf(t, r), r.cmd.Process.Pid), 1, "the run has its cgroup while it runs")
	require.Equal(t, 137, r.wait(bound), r.stderr())
	require.Less(t, time.Since(r.began), 5*time.Second)
	require.Contains(t, r.stderr(), "ran past --timeout 1s")
	sum := r.line("run")
	require.Equal(t, true, sum["timed_out"])
	require.EqualValues(t, 137, sum["exit_code"])
	cont := sum["containment"].(map[string]any)
	require.Equal(t, "cgroup", cont["backend"])
	require.Equal(t, true, cont["proven_empty"])
	require.GreaterOrEqual(t, num(cont, "killed"), float64(2))
	require.Equal(t, "timeout", cont["limit_hit"])
	require.EqualValues(t, 9, cont["signal"])
	require.Empty(t, aliveRecorded(pidsIn(filepath.Join(dir, "pids"))))
	requireNoRunDir(t, runParentOf(t, r), r.cmd.Process.Pid)
}

// `run --containment process-group` contains the same daemon without a cgroup,
// and says which backend it used.
func TestRunProcessGroupBackend(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	dir := t.TempDir()
	r := startCLI(t, dir, 0, "run", "--json", "--containment", "process-group", "--", bins.esc,
		"--pidfile", filepath.Join(dir, "pids"), "--grandchild-setsid", "--exit", "0", "--exit-after", "300ms")
	require.Equal(t, 0, r.wait(bound), r.stderr())
	require.Contains(t, r.stderr(), "containment: process-group (requested)")
	recs := pidsIn(filepath.Join(dir, "pids"))
	require.True(t, slices.ContainsFunc(recs, func(rec recorded) bool { return rec.role == "daemon" }),
		"the daemon never recorded itself: %v", recs)
	require.Empty(t, aliveRecorded(recs), "alive when run returned")
	sum := r.line("run")
	require.EqualValues(t, 0, sum["exit_code"])
	cont := sum["containment"].(map[string]any)
	require.Equal(t, "process-group", cont["backend"])
	require.Equal(t, true, cont["proven_empty"])
	require.GreaterOrEqual(t, num(cont, "killed"), float64(1))
	requireNoRunDir(t, defaultRunParent(t), r.cmd.Process.Pid)
}

// Bad `run` input is refused with 64 before anything starts.
func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	noShebang := filepath.Join(dir, "no-shebang")
	require.NoError(t, os.WriteFile(noShebang, []byte("echo started\n"), 0o755))
	for _, c := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no command", []string{"run"}, "run needs a command"},
		{"only --", []string{"run", "--"}, "run needs a command"},
		{"not executable", []string{"run", "--", notExec}, "command is not executable: " + notExec},
		{"not found", []string{"run", "--", filepath.Join(dir, "missing")}, "command not found: " + filepath.Join(dir, "missing")},
		{"no #! line", []string{"run", "--", noShebang}, "command is not executable: " + noShebang},
		{"bare name not in PATH", []string{"run", "--", "octostore-no-such-command"}, "command not found in PATH: octostore-no-such-command"},
		{"negative timeout", []string{"run", "--timeout=-1s", "--", "/bin/true"}, "--timeout must not be negative"},
	} {
		t.Run(c.name, func(t *testing.T) { requireRefused(t, nil, c.msg, c.args...) })
	}
}

// `doctor` prints one line per fact and what auto chooses.
func TestDoctorText(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	r := startCLI(t, t.TempDir(), 0, "doctor")
	require.Equal(t, 0, r.wait(bound), r.stderr())
	lines := r.out.Lines()
	find := func(name string) string {
		t.Helper()
		for _, l := range lines {
			if strings.HasPrefix(l, name) {
				return l
			}
		}
		t.Fatalf("no %q line in:\n%s", name, r.out.String())
		return ""
	}
	for _, name := range []string{"cgroup v2", "cgroup.kill", "clone3", "pidfd", "child subreaper", "pids controller", "auto chooses"} {
		find(name)
	}
	mount := cgroupMount(t)
	require.Contains(t, find("cgroup v2"), "mounted at "+mount)
	for _, name := range []string{"cgroup v2", "cgroup.kill", "pidfd", "child subreaper"} {
		require.Equal(t, "yes", strings.Fields(strings.TrimPrefix(find(name), name))[0], "%s on a Linux 6.x host as root", name)
	}
	require.Equal(t, "cgroup", strings.Fields(strings.TrimPrefix(find("auto chooses"), "auto chooses"))[0])
	// The fence is tried, not assumed: as root, a write to the v2 root's
	// cgroup.procs that the permission bits allow is refused behind it.
	fence := find("worker fence (default)")
	require.Contains(t, fence, " yes ")
	require.Contains(t, fence, "tried: writing "+filepath.Join(mount, "cgroup.procs")+" refused")
	// So is the scope (Landlock ABI 6 and up here): a connect to an abstract
	// socket and a signal out of it.
	scope := find("worker scope (default)")
	require.Contains(t, scope, " yes ")
	require.Contains(t, scope, "entered with CAP_SYS_ADMIN; tried: a connect to an abstract socket opened outside refused, a signal to our parent refused")
}

// `doctor --json` is one object: the facts (name, ok, detail) and the backend
// auto chooses - cgroup as root here, process-group for an unprivileged user.
func TestDoctorJSON(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, c := range []struct {
		name string
		uid  uint32
		want string
	}{{"root", 0, "cgroup"}, {"nobody", nobody, "process-group"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := startCLI(t, t.TempDir(), c.uid, "doctor", "--json")
			require.Equal(t, 0, r.wait(bound), r.stderr())
			lines := r.out.Lines()
			require.Len(t, lines, 1, r.out.String())
			var d struct {
				Facts       []map[string]any `json:"facts"`
				AutoBackend string           `json:"auto_backend"`
				AutoReason  string           `json:"auto_reason"`
			}
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &d))
			require.NotEmpty(t, d.Facts)
			names := map[string]bool{}
			for _, f := range d.Facts {
				require.Len(t, f, 3, "a fact is name, ok, detail: %v", f)
				name, ok := f["name"].(string)
				require.True(t, ok && name != "", "fact without a name: %v", f)
				_, ok = f["ok"].(bool)
				require.True(t, ok, "fact %q: ok is not a boolean: %v", name, f)
				detail, ok := f["detail"].(string)
				require.True(t, ok && detail != "", "fact %q without a detail: %v", name, f)
				names[name] = true
			}
			for _, want := range []string{"cgroup v2", "cgroup.kill", "pidfd", "child subreaper", "pids controller"} {
				require.True(t, names[want], "no %q fact in %v", want, names)
			}
			require.Equal(t, c.want, d.AutoBackend, d.AutoReason)
			require.True(t, strings.HasPrefix(d.AutoReason, c.want), d.AutoReason)
		})
	}
}

// `sweep` kills, proves empty and removes a run whose supervisor and guardian are
// both gone, and leaves alone a run whose supervisor or guardian lives and any
// directory that is not a run; --dry-run only lists. Each run here is marked
// as a supervisor marks its runs (markRun): the sweep touches no other. A parent that is not on
// the cgroup v2 filesystem is refused with 64.
func TestSweepAbandonedRun(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	parent := newCgroupParent(t)
	self, err := proctest.Stat(os.Getpid())
	require.NoError(t, err)
	me := fmt.Sprintf("%d.%d", os.Getpid(), self.StartTicks)

	abandoned := filepath.Join(parent, "run-999999.1-999998.1")
	supAlive := filepath.Join(parent, "run-"+me+"-999998.1")
	guardianAlive := filepath.Join(parent, "run-999997.1-"+me)
	notARun := filepath.Join(parent, "not-a-run")
	victim, victimGone := sleepIn(t, mkLeaf(t, abandoned, "worker"))
	mkLeaf(t, abandoned, "hold")
	markRun(t, abandoned)
	keep := []proctest.Record{}
	for _, d := range []string{supAlive, guardianAlive} {
		rec, _ := sleepIn(t, mkLeaf(t, d, "worker"))
		markRun(t, d)
		keep = append(keep, rec)
	}
	rec, _ := sleepIn(t, mkLeaf(t, notARun, "x"))
	keep = append(keep, rec)

	t.Run("dry run lists and touches nothing", func(t *testing.T) {
		r := startCLI(t, t.TempDir(), 0, "sweep", "--cgroup-parent", parent, "--dry-run")
		require.Equal(t, 0, r.wait(bound), r.stderr())
		require.Equal(t, []string{abandoned + "  processes 1  proven empty false  removed false"}, r.out.Lines())
		require.True(t, victim.Alive())
		require.DirExists(t, abandoned)

		r = startCLI(t, t.TempDir(), 0, "sweep", "--cgroup-parent", parent, "--dry-run", "--json")
		require.Equal(t, 0, r.wait(bound), r.stderr())
		require.Len(t, r.out.Lines(), 1)
		var s map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.out.Lines()[0]), &s))
		require.Equal(t, map[string]any{"dir": abandoned, "processes": float64(1), "proven_empty": false, "removed": false}, s)
		require.True(t, victim.Alive())
	})

	t.Run("sweep kills, proves empty and removes", func(t *testing.T) {
		r := startCLI(t, t.TempDir(), 0, "sweep", "--cgroup-parent", parent)
		require.Equal(t, 0, r.wait(bound), r.stderr())
		require.Equal(t, []string{abandoned + "  processes 1  proven empty true  removed true"}, r.out.Lines())
		require.False(t, victim.Alive(), "the abandoned run's process survived the sweep")
		select {
		case st := <-victimGone:
			ws := st.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%v", st)
		case <-time.After(bound):
			t.Fatal("the abandoned run's process was never reaped")
		}
		require.NoDirExists(t, abandoned)
		for _, d := range []string{supAlive, guardianAlive, notARun} {
			require.DirExists(t, d)
		}
		require.Empty(t, slices.DeleteFunc(slices.Clone(keep), proctest.Record.Alive), "a run with a live owner, or no run at all, was touched")

		// Nothing is left to sweep.
		r = startCLI(t, t.TempDir(), 0, "sweep", "--cgroup-parent", parent)
		require.Equal(t, 0, r.wait(bound), r.stderr())
		require.Empty(t, r.out.Lines())
	})

	t.Run("bad parent", func(t *testing.T) {
		for _, p := range []string{"/tmp", "relative/dir", filepath.Join(parent, "missing")} {
			code, out, errs := runCLI(t, nil, "sweep", "--cgroup-parent", p)
			require.Equal(t, 64, code, errs)
			require.Empty(t, out)
		}
	})
}

// Sweeps run concurrently - every supervisor sweeps at start, and so may an
// operator's `sweep` - and each must succeed: a run another sweep removed in the
// meantime is done, not an error (it was: exit 70, and the rest of the runs were
// left unswept). Four sweeps of one parent with 24 abandoned runs, eight of them
// with a live process.
func TestSweepConcurrentSweeps(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	parent := newCgroupParent(t)
	var dirs []string
	var victims []proctest.Record
	for i := range 24 {
		d := filepath.Join(parent, fmt.Sprintf("run-%d.1-%d.1", 999900+i, 999800+i))
		dirs = append(dirs, d)
		w := mkLeaf(t, d, "worker")
		mkLeaf(t, d, "hold")
		markRun(t, d)
		if i%3 == 0 {
			rec, _ := sleepIn(t, w)
			victims = append(victims, rec)
		}
	}
	sweeps := make([]*run, 4)
	for i := range sweeps {
		sweeps[i] = startCLI(t, t.TempDir(), 0, "sweep", "--cgroup-parent", parent)
	}
	codes := make([]int, len(sweeps))
	for i, r := range sweeps {
		codes[i] = r.wait(bound)
	}
	for i, r := range sweeps {
		require.Equal(t, 0, codes[i], "sweep %d: %s", i, r.stderr())
	}
	for _, d := range dirs {
		require.NoDirExists(t, d)
	}
	require.Empty(t, slices.DeleteFunc(slices.Clone(victims), func(r proctest.Record) bool { return !r.Alive() }))
}

// startCLI runs the supervisor binary with args (run, doctor, sweep) as uid (0:
// as the test) and returns it as a run, so that wait, stderr and line apply and
// the test ends with start's proofs: the supervisor has exited, every process
// recorded in dir/pids is dead and the guardian's session (if a guardian
// started) is empty.
func startCLI(t *testing.T, dir string, uid uint32, args ...string) *run {
	t.Helper()
	return startCLIIn(t, "", dir, uid, args...)
}

// startCLIIn is startCLI with the supervisor born in the cgroup cg ("": the
// test's own).
func startCLIIn(t *testing.T, cg, dir string, uid uint32, args ...string) *run {
	t.Helper()
	if uid != 0 {
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
		require.NoError(t, os.Chmod(dir, 0o777))
	}
	cmd := exec.Command(bins.sup, shareNobody(args)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: uid}
	}
	if cg != "" {
		fd, err := unix.Open(cg, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	r := &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1,
		gsess: make(chan platform.Proc, 1), sc: sc{uid: uid}}
	return launch(t, r)
}

// cgroupMount is where the cgroup v2 hierarchy is mounted, read from mountinfo.
func cgroupMount(t *testing.T) string {
	t.Helper()
	mount, err := platform.CgroupV2Mount()
	require.NoError(t, err)
	return mount
}

// defaultRunParent is where a root supervisor creates its runs by default.
func defaultRunParent(t *testing.T) string {
	return filepath.Join(cgroupMount(t), "octostore-supervisor")
}

// runParentOf is the parent the supervisor said (on stderr) it creates its run
// below; it must be the default one.
func runParentOf(t *testing.T, r *run) string {
	t.Helper()
	parent := defaultRunParent(t)
	if !proctest.Until(bound, func() bool { return strings.Contains(r.stderr(), "containment: cgroup under "+parent+" (") }) {
		t.Fatalf("no cgroup containment under %s announced:\n%s", parent, r.stderr())
	}
	return parent
}

// runDirsOf lists the run directories below parent named after supervisor sup.
// Other tests' runs, in parallel, have other supervisors.
func runDirsOf(t *testing.T, parent string, sup int) []string {
	t.Helper()
	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), fmt.Sprintf("run-%d.", sup)) {
			out = append(out, e.Name())
		}
	}
	return out
}

// requireNoRunDir proves that no cgroup of supervisor sup's run is left.
func requireNoRunDir(t *testing.T, parent string, sup int) {
	t.Helper()
	require.Empty(t, runDirsOf(t, parent, sup), "cgroup directories left below %s by supervisor %d", parent, sup)
}

// newCgroupParent makes a private cgroup directory below the cgroup v2 mount
// for the test's own runs. At cleanup everything in it is killed and the whole
// tree removed.
func newCgroupParent(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(cgroupMount(t), "octostore-it-")
	require.NoError(t, err)
	t.Cleanup(func() { removeCgroupTree(t, dir) })
	return dir
}

// removeCgroupTree kills every process below dir (cgroup.kill is recursive),
// waits until the kernel shows it empty and removes its directories, deepest
// first.
func removeCgroupTree(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		t.Errorf("kill %s: %v", dir, err)
	}
	if empty, err := platform.WaitCgroupEmpty(dir, bound); err != nil || !empty {
		t.Errorf("%s not empty after cgroup.kill (%v)", dir, err)
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		var err error
		// Right after the last task exits the kernel may answer EBUSY briefly.
		proctest.Until(time.Second, func() bool {
			err = syscall.Rmdir(dirs[i])
			return err == nil || !errors.Is(err, syscall.EBUSY)
		})
		if err != nil && !errors.Is(err, syscall.ENOENT) {
			t.Errorf("remove %s: %v", dirs[i], err)
		}
	}
}

// mkLeaf creates dir/name (and dir) and returns the leaf's path.
func mkLeaf(t *testing.T, dir, name string) string {
	t.Helper()
	leaf := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(leaf, 0o755))
	return leaf
}

// markRun marks dir as a supervisor marks the run directory it makes (the
// xattr user.octostore.run: the directory's name and inode number); the
// sweeps kill and remove no directory without it. The test, as root and
// under no file rules, can set it as any process of the runs' user could,
// which is all the mark is documented to stop.
func markRun(t *testing.T, dir string) {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(dir, &st))
	var ns unix.Stat_t
	require.NoError(t, unix.Stat("/proc/self/ns/pid", &ns))
	mark := fmt.Sprintf("%s ino %d pidns %d", filepath.Base(dir), st.Ino, ns.Ino)
	require.NoError(t, unix.Setxattr(dir, "user.octostore.run", []byte(mark), 0))
}

// sleepIn starts `sleep 600` and moves it into the cgroup leaf. The channel
// yields its wait status once it has died and been reaped; at cleanup it is
// killed if still alive.
func sleepIn(t *testing.T, leaf string) (proctest.Record, <-chan *os.ProcessState) {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	require.NoError(t, cmd.Start())
	p, err := proctest.Stat(cmd.Process.Pid)
	require.NoError(t, err)
	rec := proctest.Record{Pid: p.Pid, Start: p.StartTicks, Role: "sleep"}
	gone := make(chan *os.ProcessState, 1)
	reaped := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		gone <- cmd.ProcessState
		close(reaped)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-reaped:
		case <-time.After(bound):
			t.Errorf("sleep %d was not reaped", rec.Pid)
		}
	})
	require.NoError(t, os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(rec.Pid)), 0))
	return rec, gone
}
