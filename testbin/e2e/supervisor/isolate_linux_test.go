package supervisor

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// Worker isolation (--worker-user, --private-pids), descriptors and
// run --no-new-privs.

// cliArgs is a command line for election, lock or run with flags and a
// worker that is never started.
func cliArgs(kind string, flags ...string) []string {
	switch kind {
	case "run":
		return slices.Concat([]string{"run"}, flags, []string{"--", "/bin/true"})
	case "lock":
		return slices.Concat([]string{"lock"}, flags, []string{"room", "-", "/bin/true", "--", bins.hold})
	}
	return slices.Concat([]string{"election"}, flags, []string{"room", "agent", "/bin/true", "--", bins.hold})
}

// Every isolation request that cannot be honoured is refused with 64 and its
// reason, before anything starts, by election, lock and run alike.
func TestIsolationRefused(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, c := range []struct {
		name  string
		uid   uint32
		flags []string
		msg   string
	}{
		{"worker user needs a root supervisor", nobody, []string{"--worker-user", "daemon"}, "only root can start the worker as another user"},
		{"unknown user", 0, []string{"--worker-user", "no-such-user-octo"}, `unknown user "no-such-user-octo"`},
		{"unknown group", 0, []string{"--worker-user", "nobody:no-such-group-octo"}, `unknown group "no-such-group-octo"`},
		{"root by name", 0, []string{"--worker-user", "root"}, "is root (uid 0)"},
		{"root by uid", 0, []string{"--worker-user", "0"}, "is root (uid 0)"},
		{"root group", 0, []string{"--worker-user", "nobody:root"}, "group 0 (root)"},
		{"empty user", 0, []string{"--worker-user="}, "--worker-user needs a user"},
		{"manager accepted without a worker user", 0, []string{"--worker-user-manager-ok"}, "--worker-user-manager-ok goes with --worker-user"},
		{"run only: nothing to wait for in a namespace that ends", 0, []string{"--private-pids", "--until-empty"}, "--until-empty cannot wait under --private-pids"},
	} {
		for _, kind := range []string{"election", "lock", "run"} {
			if slices.Contains(c.flags, "--until-empty") && kind != "run" {
				continue
			}
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				r := startCLI(t, t.TempDir(), c.uid, cliArgs(kind, c.flags...)...)
				require.Equal(t, 64, r.wait(bound), r.stderr())
				require.Contains(t, r.stderr(), c.msg)
				require.NotContains(t, r.stderr(), "containment:", "nothing may start")
				require.Empty(t, r.out.String())
			})
		}
	}
}

// Where no PID namespace can be made (here: an unprivileged supervisor in a
// user namespace whose max_user_namespaces is 0), --private-pids is refused
// with 64 and the reason, never quietly dropped.
func TestPrivatePidsUnavailableRefused(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, kind := range []string{"election", "lock", "run"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			script := `echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"`
			cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh", bins.sup}, cliArgs(kind, "--private-pids")...)...)
			tmp := t.TempDir() // open to nobody, whose state directory goes here
			require.NoError(t, os.Chmod(filepath.Dir(tmp), 0o711))
			require.NoError(t, os.Chmod(tmp, 0o777))
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:                 syscall.CLONE_NEWUSER,
				UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
				GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
				GidMappingsEnableSetgroups: true,
			}
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			require.Equal(t, 64, ee.ExitCode(), "%s", out)
			require.Contains(t, string(out), "--private-pids: a PID namespace with its own /proc cannot be created here")
			require.Contains(t, string(out), "max_user_namespaces=0")
			require.NotContains(t, string(out), "containment:", "nothing may start")
		})
	}
}

// inside reads what escaper --inside wrote.
func insideOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "inside"))
	require.NoError(t, err)
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		if k == "fd" {
			got[k] += v + "\n"
			continue
		}
		got[strings.TrimSuffix(k, ":")] = v
	}
	return got
}

// sideBeyondWorker lists the supervisor and every process below it outside the
// worker's group: the guardian, both shims and the hold.
func sideBeyondWorker(t *testing.T, sup int) []int {
	t.Helper()
	var ps []platform.Proc
	parent := map[int]int{}
	// The worker's shim is the guardian's child above the escaper (once the
	// worker script has exec'd it).
	workerShim := 0
	proctest.WaitFor(t, bound, "the escaper below the supervisor", func() bool {
		ps, _ = platform.NewProcReader().Descendants(sup, nil)
		for _, p := range ps {
			parent[p.Pid] = p.PPid
		}
		for _, p := range ps {
			if strings.Contains(platform.Cmdline(p.Pid), bins.esc) {
				q := p.Pid
				for parent[q] != 0 && parent[parent[q]] != sup {
					q = parent[q]
				}
				workerShim = q
				return true
			}
		}
		return false
	})
	below := func(pid, anc int) bool {
		for q := parent[pid]; q != 0; q = parent[q] {
			if q == anc {
				return true
			}
		}
		return false
	}
	side := []int{sup}
	for _, p := range ps {
		if !p.Dead() && !below(p.Pid, workerShim) {
			side = append(side, p.Pid)
		}
	}
	require.GreaterOrEqual(t, len(side), 5, "supervisor, guardian, two shims and the hold")
	return side
}

// reachFrom hands the worker (escaper --reach {dir}/side) the supervisor
// side's pids and requires that every one of its attempts failed. A worker
// that is root (--private-pids alone, as root) may still open its cgroup's
// files: only --worker-user takes that away.
func reachFrom(t *testing.T, r *run, rootWorker bool) {
	t.Helper()
	side := sideBeyondWorker(t, r.cmd.Process.Pid)
	var b strings.Builder
	for _, pid := range side {
		fmt.Fprintf(&b, "%d\n", pid)
	}
	b.WriteString("end\n")
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, "side.tmp"), []byte(b.String()), 0o644))
	require.NoError(t, os.Rename(filepath.Join(r.dir, "side.tmp"), filepath.Join(r.dir, "side")))
	proctest.WaitFor(t, bound, "the worker's report of its attempts", func() bool {
		_, err := os.Stat(filepath.Join(r.dir, "side.done"))
		return err == nil
	})
	out, err := os.ReadFile(filepath.Join(r.dir, "side.out"))
	require.NoError(t, err)
	t.Logf("the worker's attempts on %v:\n%s", side, out)
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		n++
		if rootWorker && strings.Contains(sc.Text(), "/cgroup.") {
			continue
		}
		require.True(t, strings.HasPrefix(sc.Text(), "fail "), "the worker reached the supervisor side: %s", sc.Text())
	}
	require.GreaterOrEqual(t, n, 8*len(side), "every attempt on every process is recorded")
	require.Contains(t, string(out), "cgroup.kill", "the worker's own cgroup files were tried")
}

// --worker-user: only the worker runs as that user, in its primary group,
// with no supplementary groups and no_new_privs. It can signal, stop, ptrace, read and open nothing of the supervisor,
// the guardian, the shims or the hold (whose environment holds the token),
// and cannot write its own cgroup's files. Election and lock, both backends.
func TestWorkerUserIsolatesTheWorker(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"election", "lock"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			event := "leader"
			if kind == "lock" {
				event = "acquired"
			}
			r := start(t, sc{kind: kind, flags: []string{"--worker-user", "nobody"},
				env:    []string{"OCTOSTORE_TOKEN=tok-isolated-SECRET"},
				worker: "--term-exits --inside {dir}/inside --reach {dir}/side",
				hold:   []string{"emit:" + event + ",term=5,budget=20000", "waitfile:{dir}/side.done", "emit:lost,term=5,reason=lease_not_current"}})
			r.waitEvent(event, bound)
			reachFrom(t, r, false)
			require.Equal(t, 20, r.wait(bound), r.stderr())
			in := insideOf(t, r.dir)
			require.Equal(t, "65534 65534 65534 65534", in["Uid"])
			require.Equal(t, "65534 65534 65534 65534", in["Gid"])
			require.Empty(t, in["Groups"], "no supplementary groups")
			require.Equal(t, "1", in["NoNewPrivs"])
			require.Equal(t, true, r.line("lost")["containment"].(map[string]any)["proven_empty"])
			// The hold and the helpers stay the supervisor's own.
			require.NotContains(t, r.stderr(), "permission denied")
		})
	}
}

// The ready directory is the worker user's, and nothing else of the
// supervisor's is reachable from it (the older same-user probe, now as
// another user than the supervisor).
func TestWorkerUserOwnsOnlyItsReadyDirectory(t *testing.T) {
	t.Parallel()
	r := start(t, sc{flags: []string{"--worker-user", "nobody"}, worker: "--tamper {dir}/tamper", hold: lostAfterSetup})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	b, err := os.ReadFile(filepath.Join(r.dir, "tamper"))
	require.NoError(t, err)
	t.Logf("tamper attempts:\n%s", b)
	// A root supervisor's, below /run/octostore-supervisor/ready (readyRoot).
	ready := regexp.QuoteMeta(readyRoot) + `/[0-9a-f]{32}`
	require.Regexp(t, `(?m)^ok create `+ready+`/escaper-tamper\.\d+$`, string(b), "the ready directory is the worker's")
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		switch {
		case regexp.MustCompile(`^ok (list|create) ` + ready).MatchString(l):
		case strings.HasPrefix(l, "ok scan "):
			require.Contains(t, l, "(0 matches)")
		default:
			require.False(t, strings.HasPrefix(l, "ok "), "the worker reached supervisor state: %s", l)
		}
	}
}

// --private-pids, supervisor as root and as nobody: the worker's /proc shows
// only its own namespace (our init as pid 1, the worker and its children), it
// can name no process of the supervisor side, and when the run ends the
// whole namespace is gone - including a TERM-immune daemon it started.
func TestPrivatePidsSeesOnlyItsOwnTree(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		uid   uint32
		flags []string
	}{
		{"root", 0, []string{"--private-pids"}},
		{"nobody", nobody, []string{"--private-pids"}},
		{"root with --worker-user", 0, []string{"--private-pids", "--worker-user", "nobody"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{uid: c.uid, flags: c.flags,
				worker: "--ignore-signals --inside {dir}/inside --reach {dir}/side --grandchild-setsid --child",
				hold:   []string{"emit:leader,term=5,budget=20000", "waitfile:{dir}/side.done", "sleep:300ms", "emit:lost,term=5,reason=lease_not_current"}})
			r.waitEvent("leader", bound)
			reachFrom(t, r, c.uid == 0 && !slices.Contains(c.flags, "--worker-user")) // the worker spawns its children after this
			// Everything below the supervisor, seen from outside: after the
			// run each of these must be gone.
			waitRecorded(t, r.dir+"/pids", 3)
			var tree []proctest.Record
			for _, p := range liveDescendants(r.cmd.Process.Pid) {
				tree = append(tree, proctest.Record{Pid: p.Pid, Start: p.StartTicks})
			}
			require.Equal(t, 20, r.wait(bound), r.stderr())
			in := insideOf(t, r.dir)
			require.Equal(t, "octostore-supervisor "+"__octostore-pidinit", strings.Join(strings.Fields(in["proc1"])[:2], " "), "pid 1 is our init")
			procs := strings.Fields(in["procs"])
			require.Contains(t, procs, "1")
			require.Contains(t, procs, in["pid"])
			require.LessOrEqual(t, len(procs), 3, "only the init, the worker and its child are in view: %v", procs)
			for _, p := range procs {
				n, _ := strconv.Atoi(p)
				require.Less(t, n, 100, "a pid of the namespace, not of the host: %v", procs)
			}
			require.Equal(t, true, r.line("lost")["containment"].(map[string]any)["proven_empty"])
			for _, rec := range tree {
				require.False(t, rec.Alive(), "pid %d outlived the run", rec.Pid)
			}
		})
	}
}

// Both isolation modes together with run: the command is the namespace's
// only process beside our init, runs as nobody, and its status passes
// through.
func TestRunIsolated(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	r := startCLI(t, dir, 0, "run", "--worker-user", "nobody", "--private-pids", "--", "/bin/sh", "-c",
		`id -u; id -G; echo $$; set -- /proc/[0-9]*; echo $#; exit 3`)
	require.Equal(t, 3, r.wait(bound), r.stderr())
	got := r.out.Lines()
	require.GreaterOrEqual(t, len(got), 4, r.out.String())
	require.Equal(t, []string{"65534", "65534"}, got[:2], "uid, and the primary group alone")
	require.NotEqual(t, "1", got[2], "the command runs below our init")
	// The init and sh: the shell counts /proc with its own glob, so no
	// process of its own is in view while it counts (a pipeline's two sides
	// are forked one after the other, and the count depended on which ran
	// first).
	require.Equal(t, "2", got[3], "only the namespace's own processes are in view")
}

// run --no-new-privs starts the command with no_new_privs, and so does
// --worker-user unless --allow-new-privs (it did only when asked: issue 32);
// without either, run leaves the flag as it was.
func TestRunNoNewPrivs(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, c := range []struct {
		flags []string
		want  string
	}{{[]string{"--no-new-privs"}, "NoNewPrivs:\t1"}, {nil, "NoNewPrivs:\t0"},
		{[]string{"--worker-user", "nobody"}, "NoNewPrivs:\t1"}, {[]string{"--worker-user", "nobody", "--allow-new-privs"}, "NoNewPrivs:\t0"}} {
		r := startCLI(t, t.TempDir(), 0, slices.Concat([]string{"run"}, c.flags, []string{"--", "/bin/grep", "NoNewPrivs", "/proc/self/status"})...)
		require.Equal(t, 0, r.wait(bound), r.stderr())
		require.Equal(t, []string{c.want}, r.out.Lines(), "flags %v", c.flags)
	}
}

// secretFd7 is a descriptor the supervisor's caller left open as fd 7
// (`octostore-supervisor ... 7<secret`): ExtraFiles[4].
func secretFd7(t *testing.T) (string, []*os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "caller-secret")
	require.NoError(t, os.WriteFile(path, []byte("secret"), 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return path, []*os.File{nil, nil, nil, nil, f}
}

// A descriptor the supervisor's caller left open (fd 7) reaches neither the
// worker nor the hold.
func TestCallerDescriptorsReachNeitherWorkerNorHold(t *testing.T) {
	t.Parallel()
	secret, files := secretFd7(t)
	r := start(t, sc{files: files, worker: "--term-exits --inside {dir}/inside",
		holdPre: "ls -l /proc/$$/fd > {dir}/hold.fds",
		hold:    []string{"emit:leader,term=5,budget=20000", "waitfile:{dir}/inside", "emit:lost,term=5,reason=lease_not_current"}})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	hold, err := os.ReadFile(filepath.Join(r.dir, "hold.fds"))
	require.NoError(t, err)
	require.NotContains(t, string(hold), secret, "the hold inherited the caller's fd 7")
	fds := insideOf(t, r.dir)["fd"]
	require.Contains(t, fds, "0 /dev/null")
	require.NotContains(t, fds, secret, "the worker inherited the caller's fd 7")
}

// The same for run. The supervisor under test is itself run by an outer
// `run` (whose teardown proves both gone), from a shell that opened fd 7.
func TestRunCallerDescriptorsNotInherited(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	secret, _ := secretFd7(t)
	r := startCLI(t, t.TempDir(), 0, "run", "--", "/bin/sh", "-c",
		`exec 7<"$0"; ls -l /proc/$$/fd/7 && exec "$1" run -- /bin/sh -c 'ls -l /proc/$$/fd'`, secret, bins.sup)
	require.Equal(t, 0, r.wait(bound), r.stderr())
	out := r.out.String()
	require.Contains(t, out, "7 -> "+secret, "the caller's fd 7 was open")
	inner := out[strings.Index(out, "\n")+1:]
	require.Contains(t, inner, "/dev/null", "the command's listing is there")
	require.NotContains(t, inner, secret, "the command inherited the caller's fd 7")
}

// Under --private-pids a signal to run still reaches the command once: the
// namespace's init survives it without passing on a second copy, and the
// command's own exit status comes through.
func TestRunPrivatePidsSignalsOnce(t *testing.T) {
	t.Parallel()
	for i := range 4 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			requireSignalledOnce(t, "--private-pids")
		})
	}
}

// A TERM-obedient worker under --private-pids stops on the teardown's TERM
// (the init does not take the namespace down first).
func TestPrivatePidsGracefulStop(t *testing.T) {
	t.Parallel()
	r := start(t, sc{flags: []string{"--private-pids"}, worker: "--term-exits", hold: lostAfterSetup})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	log, err := os.ReadFile(filepath.Join(r.dir, "log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "stopped ", "the worker handled the TERM itself")
}

// Where clone3 is refused, the join helper enters the leaf as the supervisor
// and only then takes the worker's identity (or execs the namespace's init):
// the same isolation, the worker still born in its leaf.
func TestIsolationThroughTheJoinHelper(t *testing.T) {
	t.Parallel()
	for _, flags := range [][]string{{"--worker-user", "nobody"}, {"--private-pids"}, {"--private-pids", "--worker-user", "nobody"}} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{flags: flags, env: []string{"OCTOSTORE_SUPERVISOR_TESTHOOK_JOIN=1"},
				worker: "--term-exits --inside {dir}/inside", hold: lostAfterSetup})
			require.Equal(t, 20, r.wait(bound), r.stderr())
			in := insideOf(t, r.dir)
			uid := "0 0 0 0"
			if slices.Contains(flags, "--worker-user") {
				uid = "65534 65534 65534 65534"
			}
			require.Equal(t, uid, in["Uid"])
			if uid != "0 0 0 0" {
				require.Empty(t, in["Groups"])
			}
			if slices.Contains(flags, "--private-pids") {
				// The join helper execs the init by the path it was given.
				init := "octostore-supervisor __octostore-pidinit"
				if wantBackend(r.sc) == "cgroup" {
					init = "/proc/self/exe __octostore-pidinit"
				}
				require.True(t, strings.HasPrefix(in["proc1"], init), in["proc1"])
			}
		})
	}
}

// Under --private-pids the worker's namespace init starts with the worker's
// group, ahead of the gate, and waits. A run that ends before authority
// arrives ends it on the teardown's TERM (well within the 5 s grace, which a
// TERM-deaf init would sit out), and the worker never runs. (The test waits
// until the init's runtime catches TERM: a namespace's init drops signals it
// has no handler for, so one sent in the instant between its exec and its
// runtime's start is lost, and that teardown takes the grace.)
func TestPrivatePidsWaitingInitEndsBeforeTheGate(t *testing.T) {
	t.Parallel()
	r := start(t, sc{flags: []string{"--private-pids", "--term-grace", "5s"}, hold: []string{"emit:waiting"}})
	r.waitEvent("waiting", bound)
	proctest.WaitFor(t, bound, "the waiting init, catching TERM", func() bool {
		for _, p := range liveDescendants(r.cmd.Process.Pid) {
			if strings.Contains(platform.Cmdline(p.Pid), "__octostore-pidinit") && catches(p.Pid, syscall.SIGTERM) {
				return true
			}
		}
		return false
	})
	stopped := time.Now()
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, r.wait(bound), r.stderr())
	require.Less(t, time.Since(stopped), 5*time.Second, "the waiting init sat out the TERM")
	requireNeverRan(t, r)
	require.Empty(t, liveDescendants(r.cmd.Process.Pid))
}

// catches reports whether pid has a handler for sig (SigCgt in its status).
func catches(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(sig-1)) != 0
		}
	}
	return false
}
