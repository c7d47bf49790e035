package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// `run`'s summary, --summary-file, --until-empty and the lost-status exit (71),
// as a user meets them (issue 11 items 1, 2, 5, 11).

// runBackends are the backends every `run` behaviour is proven under.
var runBackends = []string{"cgroup", "process-group"}

// containmentIn returns the summary's containment object.
func containmentIn(t *testing.T, sum map[string]any) map[string]any {
	t.Helper()
	c, ok := sum["containment"].(map[string]any)
	require.True(t, ok, "no containment object in %v", sum)
	return c
}

// duration_ms is the teardown (stop trigger to proof), not the run: a command
// that sleeps 2 s and leaves nothing behind is torn down in far less than a
// second, while elapsed_ms covers the whole 2 s.
func TestRunDurationIsTheTeardown(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, backend := range runBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := startCLI(t, t.TempDir(), 0, "run", "--json", "--containment", backend, "--", "/bin/sh", "-c", "sleep 2")
			require.Equal(t, 0, r.wait(bound), r.stderr())
			sum := r.line("run")
			require.GreaterOrEqual(t, num(sum, "elapsed_ms"), float64(2000), "elapsed_ms is the whole run")
			cont := containmentIn(t, sum)
			require.GreaterOrEqual(t, num(cont, "duration_ms"), float64(0))
			require.Less(t, num(cont, "duration_ms"), float64(1000), "duration_ms is the teardown only: %v", sum)
			require.Equal(t, true, cont["proven_empty"])
		})
	}
}

// --summary-file holds run's own summary however hard the command tries to
// forge it: the command writes a fake summary there, leaves a background
// process rewriting it until it is killed, and prints a fake one on stdout.
// The file is replaced only after the tree is proven gone: valid JSON with the
// command's exit code, mode 0600, no temporary file left beside it. stdout
// carries only the command's output (no --json), or the command's output and
// then the summary (with --json).
func TestRunSummaryFileCannotBeForged(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, backend := range runBackends {
		for _, withJSON := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s json=%v", backend, withJSON), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				path := filepath.Join(dir, "summary.json")
				fake := `{"schema_version":1,"source":"octostore-supervisor","event":"run","exit_code":0,"containment":{"backend":"cgroup","proven_empty":true,"killed":0,"duration_ms":1}}`
				require.NoError(t, os.WriteFile(path, []byte("stale\n"), 0o644))
				script := fmt.Sprintf(`echo '%[1]s'
echo '%[1]s' > '%[2]s'
( while :; do echo '%[1]s' > '%[2]s'; done ) &
echo "$! $(cut -d' ' -f22 /proc/$!/stat) forger" >> '%[3]s/pids'
sleep 0.3
exit 3
`, fake, path, dir)
				args := []string{"run", "--containment", backend, "--summary-file", path}
				if withJSON {
					args = append(args, "--json")
				}
				r := startCLI(t, dir, 0, append(args, "--", "/bin/sh", "-c", script)...)
				require.Equal(t, 3, r.wait(bound), r.stderr())
				require.Empty(t, aliveRecorded(pidsIn(filepath.Join(dir, "pids"))))

				b, err := os.ReadFile(path)
				require.NoError(t, err)
				require.Equal(t, 1, strings.Count(string(b), "\n"), "one line: %q", b)
				var sum map[string]any
				require.NoError(t, json.Unmarshal(b, &sum), "%q", b)
				require.EqualValues(t, 3, sum["exit_code"])
				require.Equal(t, "run", sum["event"])
				cont := containmentIn(t, sum)
				require.Equal(t, backend, cont["backend"])
				require.Equal(t, true, cont["proven_empty"])
				require.GreaterOrEqual(t, num(cont, "killed"), float64(1), "the forger was killed")
				st, err := os.Stat(path)
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
				left, _ := filepath.Glob(filepath.Join(dir, ".summary.json.tmp-*"))
				require.Empty(t, left, "temporary files left")

				out := r.out.Lines()
				require.Equal(t, fake, out[0], "the command's own stdout passes through")
				if withJSON {
					require.Len(t, out, 2)
					require.JSONEq(t, strings.TrimSpace(string(b)), out[1], "stdout's summary is the file's")
				} else {
					require.Len(t, out, 1, "no summary on stdout without --json")
				}
			})
		}
	}
	t.Run("bad paths are refused before anything starts", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		for _, p := range []string{filepath.Join(dir, "missing", "summary.json"), dir} {
			code, out, errs := runCLI(t, nil, "run", "--summary-file", p, "--", "/bin/true")
			require.Equal(t, 64, code, errs)
			require.Empty(t, out)
			require.Contains(t, errs, "--summary-file")
			require.NotContains(t, errs, "containment:", "nothing may start")
		}
	})
}

// daemonScript is a command that daemonizes like `redis-server --daemonize
// yes`: a setsid'd grandchild that finishes on its own after `lifetime`
// (writing dir/finished), while the main process exits 4 at once.
func daemonScript(dir, lifetime string) string {
	return fmt.Sprintf(`setsid sh -c 'echo "$$ $(cut -d" " -f22 /proc/$$/stat) daemon" >> "%[1]s/pids"; sleep %[2]s; echo done > "%[1]s/finished"' &
exit 4
`, dir, lifetime)
}

// --until-empty waits for what the command left running to finish on its own
// and exits with the main process's status; without it the main process's exit
// kills the daemon at once. With --timeout the daemon is stopped at the
// timeout and run exits with the main process's status, saying timed_out.
func TestRunUntilEmpty(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, backend := range runBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			t.Run("waits for the daemon", func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				r := startCLI(t, dir, 0, "run", "--json", "--until-empty", "--containment", backend, "--", "/bin/sh", "-c", daemonScript(dir, "1"))
				require.Equal(t, 4, r.wait(bound), r.stderr())
				require.FileExists(t, filepath.Join(dir, "finished"), "the daemon ran to its end")
				require.Contains(t, r.stderr(), "--until-empty")
				require.Contains(t, r.stderr(), "worker group proven empty at ")
				sum := r.line("run")
				require.EqualValues(t, 4, sum["exit_code"])
				require.Nil(t, sum["timed_out"])
				require.GreaterOrEqual(t, num(sum, "elapsed_ms"), float64(1000))
				cont := containmentIn(t, sum)
				require.Equal(t, true, cont["proven_empty"])
				require.EqualValues(t, 0, cont["killed"], "nothing was left to kill")
			})
			t.Run("without it the daemon is killed", func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				r := startCLI(t, dir, 0, "run", "--json", "--containment", backend, "--", "/bin/sh", "-c",
					daemonScript(dir, "1")+"\n")
				require.Equal(t, 4, r.wait(bound), r.stderr())
				require.Equal(t, true, containmentIn(t, r.line("run"))["proven_empty"])
				require.Empty(t, aliveRecorded(pidsIn(filepath.Join(dir, "pids"))))
				require.NoFileExists(t, filepath.Join(dir, "finished"))
			})
			t.Run("timeout stops it", func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				r := startCLI(t, dir, 0, "run", "--json", "--until-empty", "--timeout", "1s", "--term-grace", "200ms",
					"--containment", backend, "--", "/bin/sh", "-c", daemonScript(dir, "600"))
				require.Equal(t, 4, r.wait(bound), r.stderr())
				require.Contains(t, r.stderr(), "ran past --timeout 1s")
				sum := r.line("run")
				require.Equal(t, true, sum["timed_out"])
				require.EqualValues(t, 4, sum["exit_code"])
				cont := containmentIn(t, sum)
				require.Equal(t, true, cont["proven_empty"])
				require.GreaterOrEqual(t, num(cont, "killed"), float64(1))
				recs := pidsIn(filepath.Join(dir, "pids"))
				require.Len(t, recs, 1, "the daemon recorded itself")
				require.Empty(t, aliveRecorded(recs))
				require.NoFileExists(t, filepath.Join(dir, "finished"))
			})
		})
	}
}

// shimOf returns the pid of the shim whose child is the recorded "worker"
// (the escaper's main process).
func shimOf(t *testing.T, recs []recorded) int {
	t.Helper()
	for _, rec := range recs {
		if rec.role == "worker" {
			p, err := proctest.Stat(rec.pid)
			require.NoError(t, err)
			require.Contains(t, platform.Cmdline(p.PPid), "__octostore-shim")
			return p.PPid
		}
	}
	t.Fatalf("no worker among %v", recs)
	return 0
}

// When a helper rooting the command's container is killed - the shim whose
// child the command is, or the guardian - the command's status is lost, but
// everything it started is still proven gone: run exits 71 (not 70, which
// means emptiness could not be proven), the summary says status_unknown and
// proven_empty, and stderr says when the tree was proven gone.
func TestRunLostStatusIsProvenEmpty(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, backend := range runBackends {
		for _, victim := range []string{"shim", "guardian"} {
			t.Run(backend+" "+victim, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				summary := filepath.Join(dir, "summary.json")
				r := startCLI(t, dir, 0, "run", "--json", "--summary-file", summary, "--containment", backend, "--",
					bins.esc, "--pidfile", filepath.Join(dir, "pids"), "--ignore-signals", "--child")
				recs := waitPidLines(t, filepath.Join(dir, "pids"), 2, bound)
				pid := guardianOf(t, r.cmd.Process.Pid)
				if victim == "shim" {
					pid = shimOf(t, recs)
				}
				require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
				require.Equal(t, 71, r.wait(bound), r.stderr())
				require.Empty(t, aliveRecorded(recs))
				require.Contains(t, r.stderr(), "worker group proven empty at ")
				require.Contains(t, r.stderr(), "exit status is unknown")
				sum := r.line("run")
				require.EqualValues(t, 71, sum["exit_code"])
				require.Equal(t, true, sum["status_unknown"])
				require.Equal(t, true, containmentIn(t, sum)["proven_empty"])
				b, err := os.ReadFile(summary)
				require.NoError(t, err)
				require.JSONEq(t, r.out.Lines()[0], string(b))
			})
		}
	}
}

// In an election, a killed worker shim is contained by the guardian; the hold
// then releases the lease as after any worker end. The run says so honestly:
// the proven-empty line, the hold's released with its containment (no
// worker_exit_code: the worker's status is unknown), and exit 71.
func TestElectionWorkerShimKilledIsHonest(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--ignore-signals --child", hold: []string{"emit:leader,term=7,budget=10000"}})
	r.waitEvent("leader", bound)
	members := waitPidLines(t, filepath.Join(r.dir, "pids"), 2, bound)
	require.NoError(t, syscall.Kill(shimOf(t, members), syscall.SIGKILL))
	require.Equal(t, 71, r.wait(bound), r.stderr())
	require.Empty(t, aliveRecorded(members))
	require.Equal(t, []string{"leader", "released"}, r.events())
	rel := r.line("released")
	require.Nil(t, rel["worker_exit_code"], "the worker's status is unknown")
	require.Equal(t, true, rel["containment"].(map[string]any)["proven_empty"])
	require.Contains(t, r.stderr(), "the process rooting the worker group died unexpectedly")
	require.Contains(t, r.stderr(), "worker group proven empty at ")
}

// freezeV1 puts pid into a fresh cgroup v1 freezer group and freezes it: a
// task frozen there cannot die of SIGKILL until it is thawed, the same as one
// stuck in the kernel. At cleanup it is thawed (so its pending kill lands) and
// the group removed.
func freezeV1(t *testing.T, pid int) (thaw func()) {
	t.Helper()
	root := "/sys/fs/cgroup/freezer"
	_, err := os.Stat(filepath.Join(root, "cgroup.procs"))
	require.NoError(t, err, "this test needs the cgroup v1 freezer at %s (a hybrid host)", root)
	dir, err := os.MkdirTemp(root, "octostore-it-")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("FROZEN"), 0))
	proctest.WaitFor(t, bound, "the freezer group to freeze", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "freezer.state"))
		return strings.TrimSpace(string(b)) == "FROZEN"
	})
	thawed := false
	thaw = func() {
		if !thawed {
			thawed = true
			_ = os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0)
		}
	}
	t.Cleanup(func() {
		thaw()
		proctest.WaitFor(t, bound, "the freezer group to empty", func() bool {
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			return strings.TrimSpace(string(b)) == ""
		})
		require.NoError(t, syscall.Rmdir(dir))
	})
	return thaw
}

// One abandoned run whose process cannot be killed costs the first start that
// finds it the short start-up bound and one message naming `sweep` and
// `doctor`; later starts neither wait for it nor mention it. `sweep --dry-run`
// lists it (and reports an abandoned run with no process as proven empty);
// once its process is gone the next start removes it.
func TestStartupSweepRemembersAnUnprovableRun(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	parent := newCgroupParent(t)
	stuck := filepath.Join(parent, "run-999999.1-999998.1")
	empty := filepath.Join(parent, "run-999997.1-999996.1")
	victim, victimGone := sleepIn(t, mkLeaf(t, stuck, "worker"))
	mkLeaf(t, stuck, "hold")
	mkLeaf(t, empty, "worker")
	markRun(t, stuck)
	markRun(t, empty)
	thaw := freezeV1(t, victim.Pid)

	t.Run("dry run: a run with no process is proven empty", func(t *testing.T) {
		r := startCLI(t, t.TempDir(), 0, "sweep", "--cgroup-parent", parent, "--dry-run")
		require.Equal(t, 0, r.wait(bound), r.stderr())
		require.ElementsMatch(t, []string{
			stuck + "  processes 1  proven empty false  removed false",
			empty + "  processes 0  proven empty true  removed false",
		}, r.out.Lines())
	})

	startRun := func() *run {
		r := startCLI(t, t.TempDir(), 0, "run", "--cgroup-parent", parent, "--", "/bin/true")
		require.Equal(t, 0, r.wait(bound), r.stderr())
		return r
	}
	first := startRun()
	require.Contains(t, first.stderr(), "swept abandoned run "+empty+": 0 processes, proven empty true, removed true")
	require.Contains(t, first.stderr(), "abandoned run "+stuck+" still holds 1 processes")
	require.Contains(t, first.stderr(), "octostore-supervisor sweep")
	require.Contains(t, first.stderr(), "octostore-supervisor doctor")
	require.NoDirExists(t, empty)
	require.True(t, victim.Alive())
	for range 3 {
		again := startRun()
		require.NotContains(t, again.stderr(), stuck, "a later start waited on the marked run again")
	}

	r := startCLI(t, t.TempDir(), 0, "sweep", "--cgroup-parent", parent, "--dry-run", "--json")
	require.Equal(t, 0, r.wait(bound), r.stderr())
	require.Len(t, r.out.Lines(), 1)
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.out.Lines()[0]), &s))
	require.Equal(t, stuck, s["dir"])
	require.Equal(t, false, s["proven_empty"])
	require.NotEmpty(t, s["unproven_since"], "the start-up sweep's mark")

	thaw() // the pending SIGKILL lands
	select {
	case <-victimGone:
	case <-time.After(bound):
		t.Fatal("the thawed process did not die of its pending kill")
	}
	last := startRun()
	require.Contains(t, last.stderr(), "swept abandoned run "+stuck+": 0 processes, proven empty true, removed true")
	require.NoDirExists(t, stuck)
}

// A directory named like an abandoned run that no supervisor marked, holding
// a live process - as a worker of the runs' user staged one, with another
// run's worker moved into it, and had the next start kill that worker - is
// left alone by the start-up sweep, which says so, and by `sweep`, which
// lists it as not ours. The test then ends its process and removes the
// directory itself.
func TestStartupSweepLeavesUnmarkedRunAlone(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	parent := newCgroupParent(t)
	forged := filepath.Join(parent, "run-999999.1-999998.1")
	leaf := mkLeaf(t, forged, "worker")
	victim, victimGone := sleepIn(t, leaf)

	r := startCLI(t, t.TempDir(), 0, "run", "--cgroup-parent", parent, "--", "true")
	require.Equal(t, 0, r.wait(bound), r.stderr())
	require.Contains(t, r.stderr(), forged+" is named like a run but not marked by a supervisor: left alone")
	require.NotContains(t, r.stderr(), "swept abandoned run "+forged)
	require.True(t, victim.Alive(), "the start-up sweep killed a process in a directory no supervisor marked")
	require.DirExists(t, forged)
	require.Empty(t, runDirsOf(t, parent, r.cmd.Process.Pid), "the run's own cgroup was left")

	// `sweep` lists it as not ours, looking only, with or without
	// --dry-run, and it is no failure to prove a run empty (exit 0).
	for _, args := range [][]string{{"--dry-run"}, {}} {
		sw := startCLI(t, t.TempDir(), 0, append([]string{"sweep", "--cgroup-parent", parent, "--json"}, args...)...)
		require.Equal(t, 0, sw.wait(bound), sw.stderr())
		require.Len(t, sw.out.Lines(), 1, "sweep %v: %s", args, sw.stderr())
		var s map[string]any
		require.NoError(t, json.Unmarshal([]byte(sw.out.Lines()[0]), &s))
		require.Equal(t, map[string]any{"dir": forged, "processes": float64(1), "proven_empty": false, "removed": false, "not_ours": true}, s)
		require.True(t, victim.Alive(), "sweep %v killed a process in a directory no supervisor marked", args)
		require.DirExists(t, forged)
	}

	require.NoError(t, syscall.Kill(victim.Pid, syscall.SIGKILL))
	select {
	case st := <-victimGone:
		ws := st.Sys().(syscall.WaitStatus)
		require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%v", st)
	case <-time.After(bound):
		t.Fatal("the test's sleep was never reaped")
	}
	require.False(t, victim.Alive())
	for _, d := range []string{leaf, forged} {
		var err error
		// Right after the last task exits the kernel may answer EBUSY briefly.
		proctest.Until(time.Second, func() bool {
			err = syscall.Rmdir(d)
			return !errors.Is(err, syscall.EBUSY)
		})
		require.NoError(t, err, "remove %s", d)
	}
	require.NoDirExists(t, forged)
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func listening(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// daemon is a real self-daemonizing server, started with a private
// configuration, directory and loopback port.
type daemon struct {
	name, bin, comm, apt string
	argv                 func(t *testing.T, dir string, port int) []string
}

var daemons = []daemon{
	{"nginx", "/usr/sbin/nginx", "nginx", "apt-get install -y nginx-light", func(t *testing.T, dir string, port int) []string {
		conf := filepath.Join(dir, "nginx.conf")
		require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`worker_processes 2;
user nobody nogroup;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	server { listen 127.0.0.1:%[2]d; location / { return 200 "ok\n"; } }
}
`, dir, port)), 0o644))
		return []string{"/usr/sbin/nginx", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf}
	}},
	{"redis", "/usr/bin/redis-server", "redis-server", "apt-get install -y redis-server", func(t *testing.T, dir string, port int) []string {
		return []string{"/usr/bin/redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--daemonize", "yes",
			"--dir", dir, "--pidfile", filepath.Join(dir, "redis.pid"), "--logfile", filepath.Join(dir, "redis.log"),
			"--save", "", "--appendonly", "no"}
	}},
	{"memcached", "/usr/bin/memcached", "memcached", "apt-get install -y memcached", func(t *testing.T, dir string, port int) []string {
		return []string{"/usr/bin/memcached", "-d", "-u", "nobody", "-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0"}
	}},
}

// daemonsLeft lists live processes of comm below the test process: the test
// is a child subreaper, so a daemon that escaped run would be re-parented here.
func daemonsLeft(comm string) []platform.Proc {
	var out []platform.Proc
	for _, p := range liveDescendants(os.Getpid()) {
		if p.Comm == comm {
			out = append(out, p)
		}
	}
	return out
}

// Real self-daemonizing servers under `run`, both backends. Without
// --until-empty the main process's exit ends the run and kills the daemon it
// left; with it, the daemon serves until a SIGTERM to run reaches it, and run
// exits with the main process's status. Either way everything the daemon
// started is gone afterwards and its port is free. The daemons of one kind run
// one after another, so none is confused with another test's.
func TestRunRealDaemons(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, d := range daemons {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(d.bin); err != nil {
				t.Fatalf("%s is not installed (%v): %s", d.bin, err, d.apt)
			}
			for _, backend := range runBackends {
				for _, untilEmpty := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s until-empty=%v", backend, untilEmpty), func(t *testing.T) {
						dir := t.TempDir()
						port := freePort(t)
						args := []string{"run", "--json", "--containment", backend}
						if untilEmpty {
							args = append(args, "--until-empty")
						}
						r := startCLI(t, dir, 0, append(append(args, "--"), d.argv(t, dir, port)...)...)
						if untilEmpty {
							// Both: a port picked free a moment ago may have been taken by
							// another test's listener since, and answer for a daemon that
							// did not start.
							proctest.WaitFor(t, bound, d.name+" to serve on its port", func() bool {
								select {
								case <-r.done:
									t.Fatalf("run exited %d while %s should serve; stderr:\n%s", r.code, d.name, r.stderr())
								default:
								}
								return listening(port) && len(daemonsLeft(d.comm)) > 0
							})
							require.NotEmpty(t, daemonsLeft(d.comm), "the daemon runs under run")
							require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
						}
						require.Equal(t, 0, r.wait(bound), r.stderr())
						cont := containmentIn(t, r.line("run"))
						require.Equal(t, backend, cont["backend"])
						require.Equal(t, true, cont["proven_empty"])
						if !untilEmpty {
							require.GreaterOrEqual(t, num(cont, "killed"), float64(1), "the daemon was left and killed")
						}
						require.Empty(t, daemonsLeft(d.comm), "%s processes left after run", d.name)
						if listening(port) {
							// Seen once with memcached (threaded): its thread-group
							// leader was already a zombie - dead by the proof's
							// per-process test - while other threads were still
							// exiting with the socket open. Issue 10 item 1 (liveness
							// by thread group) closes this window; until then a short
							// bounded wait, logged.
							t.Logf("port %d still served right after run; waiting for it to close", port)
							proctest.WaitFor(t, 2*time.Second, fmt.Sprintf("port %d to close", port), func() bool { return !listening(port) })
						}
						if backend == "cgroup" {
							requireNoRunDir(t, defaultRunParent(t), r.cmd.Process.Pid)
						}
					})
				}
			}
		})
	}
}
