package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// What --worker-user runs on one host share, attacked as a worker would
// (issue 32, findings 7 and 8): a worker user two runs use, their ready
// files, the worker's environment, no_new_privs and its stderr.

// shareNobody adds --share-worker-user after a `--worker-user nobody`: the
// tests whose workers run as nobody run at the same time, and share it. The
// default, one live run to a worker user, is tested with users of their own
// (spareUser).
func shareNobody(args []string) []string {
	if slices.Contains(args, "--share-worker-user") {
		return args
	}
	for i, a := range args {
		if a == "--worker-user" && i+1 < len(args) && (args[i+1] == "nobody" || strings.HasPrefix(args[i+1], "nobody:")) {
			return slices.Concat(args[:i+2], []string{"--share-worker-user"}, args[i+2:])
		}
	}
	return args
}

// script writes an executable shell script.
func script(t *testing.T, path, body string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return path
}

// Runs that share a worker user can attack each other; another live run's
// user is refused (64, before anything starts, naming it) by election, lock
// and run, unless every run that shares it says so: a run that says so
// cannot join one that did not, and runs that say so share.
func TestWorkerUserOfAnotherLiveRunRefused(t *testing.T) {
	t.Parallel()
	u := spareUser(t, "man")
	name := u.Username
	refused := func(t *testing.T, args ...string) {
		t.Helper()
		r := startCLI(t, t.TempDir(), 0, args...)
		require.Equal(t, 64, r.wait(bound), r.stderr())
		require.Contains(t, r.stderr(), "--worker-user "+name+": another live run on this host runs its worker as uid "+u.Uid)
		require.NotContains(t, r.stderr(), "containment:", "nothing may start")
		require.Empty(t, r.out.String())
	}
	holding := func(share ...string) *run {
		a := startCLI(t, t.TempDir(), 0, slices.Concat([]string{"run", "--worker-user", name}, share, []string{"--", "/bin/sleep", "60"})...)
		proctest.WaitFor(t, bound, "the first run to start", func() bool { return strings.Contains(a.stderr(), "containment:") })
		return a
	}
	a := holding()
	for _, kind := range []string{"election", "lock", "run"} {
		refused(t, cliArgs(kind, "--worker-user", name)...)
	}
	refused(t, cliArgs("run", "--worker-user", name, "--share-worker-user")...)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, a.wait(bound), a.stderr())

	a = holding("--share-worker-user")
	b := startCLI(t, t.TempDir(), 0, cliArgs("run", "--worker-user", name, "--share-worker-user")...)
	require.Equal(t, 0, b.wait(bound), b.stderr())
	refused(t, cliArgs("election", "--worker-user", name)...)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, a.wait(bound), a.stderr())
	// Free once its last run is gone.
	c := startCLI(t, t.TempDir(), 0, cliArgs("run", "--worker-user", name)...)
	require.Equal(t, 0, c.wait(bound), c.stderr())
}

// One run's worker created another run's ready file (both workers one
// user, with --private-pids), and that run printed leader under
// --require-worker-ready although its worker never signalled ready. The
// thief looks for three seconds where it can list (its ready directory's
// parent, which was $TMPDIR, both runs' alike; /tmp) and in every
// environment it can read. Ready directories are now in a directory no one
// may list, under names no one can guess: a thief that cannot read the other
// worker's environment, because it cannot see it (--private-pids) or its
// Landlock scope keeps it out (the default), finds nothing, and the other
// run waits out its readiness (exit 20). Where it can read it (no scope, no
// PID namespace: the control) it still takes the name from there.
func TestRunsSharingAWorkerUserKeepTheirReadyFiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, user string
		flags      []string
		finds      bool
	}{
		{"private-pids", "lp", []string{"--private-pids"}, false},
		{"default scope", "news", nil, false},
		{"control: no scope", "uucp", []string{"--no-worker-scope"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			flags := append([]string{"--worker-user", spareUser(t, c.user).Username, "--share-worker-user"}, c.flags...)
			b, a, report := stealReady(t, flags)
			if c.finds {
				require.Contains(t, b.out.String(), `"event":"leader"`, "the control: the thief took the name from the other worker's environment")
				return
			}
			require.NotContains(t, b.out.String(), `"event":"leader"`, "the thief made the other run report authority")
			require.Contains(t, b.stderr(), "worker process did not acknowledge application readiness")
			require.NotContains(t, report, "ok create")
			require.Contains(t, report, "fail list "+readyRoot+": open "+readyRoot+": permission denied")
			require.Equal(t, 20, a.code)
		})
	}
}

// stealReady runs B, whose worker never signals ready (--require-worker-ready),
// then A, whose worker is the ready thief, both with flags, both with one
// $TMPDIR; it returns both, ended, and the thief's report.
func stealReady(t *testing.T, flags []string) (b, a *run, report string) {
	t.Helper()
	tmp := t.TempDir() // both supervisors' $TMPDIR: root's, readable by all, as /tmp
	require.NoError(t, os.Chmod(filepath.Dir(tmp), 0o711))
	require.NoError(t, os.Chmod(tmp, 0o755))
	dir := openDir(t)
	victim := script(t, dir+"/victim.sh", fmt.Sprintf("exec '%s' --pidfile '%s/pids' --term-exits", bins.esc, dir))
	thief := script(t, dir+"/thief.sh", fmt.Sprintf("ATTACKER_MODE=ready-thief ATTACKER_REPORT='%s/thief' exec '%s'", dir, bins.attacker))
	b = startSup(t, dir, []string{"TMPDIR=" + tmp}, slices.Concat([]string{"election"}, flags, containmentFlags(),
		[]string{"--require-worker-ready", "--ready-timeout", "8s", "room-b", "agent", victim, "--", bins.hold, "--name", "room-b",
			"emit:leader,term=1,budget=30000", "sleep:10s", "emit:lost,term=1,reason=lease_not_current"})...)
	waitRecorded(t, dir+"/pids", 1)
	a = startSup(t, dir, []string{"TMPDIR=" + tmp}, slices.Concat([]string{"election"}, flags, containmentFlags(),
		[]string{"room-a", "agent", thief, "--", bins.hold, "--name", "room-a",
			"emit:leader,term=1,budget=30000", "waitfile:" + dir + "/thief", "emit:lost,term=1,reason=lease_not_current"})...)
	a.wait(bound)
	rep, err := os.ReadFile(dir + "/thief")
	require.NoError(t, err, a.stderr())
	t.Logf("the thief's attempts:\n%s", rep)
	require.Equal(t, 20, b.wait(bound), b.stderr())
	return b, a, string(rep)
}

// A --worker-user worker got root's whole environment but the OCTOSTORE
// secrets, so CI and cloud credentials reached it. It gets a fresh one for
// its user, as sudo's env_reset makes it, with the terminal and locale
// variables kept and what --worker-env names passed on; a supervised one
// also its fencing term and ready file.
func TestWorkerUserGetsAFreshEnvironment(t *testing.T) {
	t.Parallel()
	planted := []string{"CI_SECRET=ci-token", "HOME=/root", "PATH=/root/bin:/usr/bin:/bin", "TERM=vt100", "LANG=C.UTF-8", "LC_TIME=C", "OCTOSTORE_TOKEN=tok"}
	fresh := map[string]string{"HOME": "/nonexistent", "USER": "nobody", "LOGNAME": "nobody", "SHELL": "/usr/sbin/nologin",
		"PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "vt100", "LANG": "C.UTF-8", "LC_TIME": "C"}
	for _, v := range os.Environ() { // kept from the test's own environment
		if k, val, _ := strings.Cut(v, "="); k == "LANGUAGE" || k == "TZ" || strings.HasPrefix(k, "LC_") && k != "LC_TIME" {
			fresh[k] = val
		}
	}
	t.Run("run", func(t *testing.T) {
		r := startSup(t, t.TempDir(), planted, "run", "--worker-user", "nobody", "--", "/usr/bin/env")
		require.Equal(t, 0, r.wait(bound), r.stderr())
		require.Equal(t, fresh, envOf(r.out.Lines()))
		r = startSup(t, t.TempDir(), planted, "run", "--worker-user", "nobody", "--worker-env", "CI_SECRET", "--worker-env", "PATH", "--", "/usr/bin/env")
		require.Equal(t, 0, r.wait(bound), r.stderr())
		got := envOf(r.out.Lines())
		require.Equal(t, "ci-token", got["CI_SECRET"], "passed on by name")
		require.Equal(t, "/root/bin:/usr/bin:/bin", got["PATH"], "passed on by name, over the fresh one")
	})
	t.Run("election", func(t *testing.T) {
		dir := openDir(t)
		worker := script(t, dir+"/worker.sh", "/usr/bin/env > "+dir+"/env.tmp && mv "+dir+"/env.tmp "+dir+"/env\nexec /bin/sleep 60")
		r := startSup(t, dir, planted, slices.Concat([]string{"election", "--worker-user", "nobody"}, containmentFlags(), []string{"room", "agent", worker,
			"--", bins.hold, "emit:leader,term=5,budget=20000", "waitfile:" + dir + "/env", "emit:lost,term=5,reason=lease_not_current"})...)
		require.Equal(t, 20, r.wait(bound), r.stderr())
		b, err := os.ReadFile(dir + "/env")
		require.NoError(t, err)
		got := envOf(strings.Split(strings.TrimSpace(string(b)), "\n"))
		require.Equal(t, "5", got["OCTOSTORE_FENCING_TERM"])
		require.True(t, strings.HasPrefix(got["OCTOSTORE_SUPERVISOR_READY_FILE"], readyRoot+"/"), got["OCTOSTORE_SUPERVISOR_READY_FILE"])
		delete(got, "OCTOSTORE_FENCING_TERM")
		delete(got, "OCTOSTORE_SUPERVISOR_READY_FILE")
		for _, k := range []string{"PWD", "SHLVL", "_"} { // the shell's own
			delete(got, k)
		}
		require.Equal(t, fresh, got)
	})
}

// An agent's command run as our own user got our whole environment: API
// keys, CI tokens. With --clean-env it gets the fresh one a --worker-user
// worker gets, for our user, and what --worker-env names; without it, it
// gets ours (the test bites).
func TestCleanEnvGivesOurUserAFreshEnvironment(t *testing.T) {
	t.Parallel()
	planted := []string{"CI_SECRET=ci-token", "OPENAI_API_KEY=sk-planted", "HOME=/elsewhere", "PATH=/root/bin:/usr/bin:/bin", "TERM=vt100", "LANG=C.UTF-8", "LC_TIME=C"}
	me, err := user.Current()
	require.NoError(t, err)
	fresh := map[string]string{"HOME": me.HomeDir, "USER": me.Username, "LOGNAME": me.Username, "SHELL": loginShellOf(t, me.Username),
		"PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "vt100", "LANG": "C.UTF-8", "LC_TIME": "C"}
	for _, v := range os.Environ() { // kept from the test's own environment
		if k, val, _ := strings.Cut(v, "="); k == "LANGUAGE" || k == "TZ" || strings.HasPrefix(k, "LC_") && k != "LC_TIME" {
			fresh[k] = val
		}
	}
	r := startSup(t, t.TempDir(), planted, "run", "--clean-env", "--", "/usr/bin/env")
	require.Equal(t, 0, r.wait(bound), r.stderr())
	require.Equal(t, fresh, envOf(r.out.Lines()))

	r = startSup(t, t.TempDir(), planted, "run", "--clean-env", "--worker-env", "OPENAI_API_KEY", "--", "/usr/bin/env")
	require.Equal(t, 0, r.wait(bound), r.stderr())
	got := envOf(r.out.Lines())
	require.Equal(t, "sk-planted", got["OPENAI_API_KEY"], "passed on by name")
	require.NotContains(t, got, "CI_SECRET")

	r = startSup(t, t.TempDir(), planted, "run", "--", "/usr/bin/env")
	require.Equal(t, 0, r.wait(bound), r.stderr())
	got = envOf(r.out.Lines())
	require.Equal(t, "ci-token", got["CI_SECRET"], "without --clean-env the worker has ours: the test does not bite")
}

// loginShellOf is name's shell in /etc/passwd.
func loginShellOf(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, ":"); len(f) == 7 && f[0] == name {
			return f[6]
		}
	}
	t.Fatalf("%s is not in /etc/passwd", name)
	return ""
}

// envOf reads env(1)'s lines.
func envOf(lines []string) map[string]string {
	m := map[string]string{}
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// The worker-user options are refused (64, naming why) where they cannot
// mean anything, and the holder's secrets and what the supervisor sets
// itself cannot be passed to a supervised worker.
func TestWorkerUserOptionsRefused(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, c := range []struct {
		kind, msg string
		flags     []string
	}{
		{"election", "--worker-env goes with --worker-user or --clean-env", []string{"--worker-env", "CI_SECRET"}},
		{"run", "--share-worker-user goes with --worker-user", []string{"--share-worker-user"}},
		{"run", "--share-worker-user goes with --worker-user", []string{"--clean-env", "--share-worker-user"}},
		{"election", "--worker-env OCTOSTORE_TOKEN: the holder's secret never reaches the worker", []string{"--clean-env", "--worker-env", "OCTOSTORE_TOKEN"}},
		{"election", "--worker-env OCTOSTORE_TOKEN: the holder's secret never reaches the worker", []string{"--worker-user", "nobody", "--worker-env", "OCTOSTORE_TOKEN"}},
		{"lock", "--worker-env OCTOSTORE_FENCING_TERM: the supervisor sets it for the worker itself", []string{"--worker-user", "nobody", "--worker-env", "OCTOSTORE_FENCING_TERM"}},
		{"lock", `--worker-env "A=B" is not the name of a variable`, []string{"--worker-user", "nobody", "--worker-env", "A=B"}},
		{"run", "--allow-new-privs goes with --worker-user", []string{"--allow-new-privs"}},
		{"run", "--allow-new-privs and --no-new-privs contradict each other", []string{"--worker-user", "nobody", "--allow-new-privs", "--no-new-privs"}},
	} {
		t.Run(c.kind+" "+strings.Join(c.flags, " "), func(t *testing.T) {
			t.Parallel()
			r := startCLI(t, t.TempDir(), 0, cliArgs(c.kind, c.flags...)...)
			require.Equal(t, 64, r.wait(bound), r.stderr())
			require.Contains(t, r.stderr(), c.msg)
			require.NotContains(t, r.stderr(), "containment:", "nothing may start")
		})
	}
}

// The worker wrote straight into the supervisor's stderr descriptor: one of
// another user truncated root's log file through it (ftruncate needs only the
// descriptor). It gets a pipe of its own, which the guardian copies into the
// log: the log keeps what was there, and the worker's line arrives.
func TestWorkerUserCannotTruncateTheSupervisorsLog(t *testing.T) {
	t.Parallel()
	dir := openDir(t)
	log := filepath.Join(t.TempDir(), "supervisor.log")
	require.NoError(t, os.WriteFile(log, []byte("root's earlier diagnostics\n"), 0o600))
	worker := script(t, dir+"/worker.sh", fmt.Sprintf("ATTACKER_MODE=stderr ATTACKER_REPORT='%s/stderr' exec '%s'", dir, bins.attacker))
	cmd := exec.Command("/bin/sh", slices.Concat([]string{"-c", `exec "$@" 2>>"$0"`, log, bins.sup, "run", "--worker-user", "nobody", "--share-worker-user"},
		containmentFlags(), []string{"--", worker})...)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	r := launch(t, &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1, gsess: make(chan platform.Proc, 1)})
	require.Equal(t, 0, r.wait(bound), r.stderr())
	report, err := os.ReadFile(dir + "/stderr")
	require.NoError(t, err)
	t.Logf("the worker's attempts:\n%s", report)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), "root's earlier diagnostics\n"), "the worker truncated the supervisor's log:\n%s", b)
	require.Contains(t, string(b), "worker line on stderr\n", "the worker's stderr is relayed")
	require.Contains(t, string(report), "fail ftruncate fd 2")
	require.Regexp(t, `(?m)^ok readlink fd 2 \(pipe:\[\d+\]\)$`, string(report))
}

// On a terminal, the worker's stderr was the supervisor's: it could write
// escape sequences to it (here: set the window title, colour) and change its
// settings. Relayed, its control characters reach the terminal in caret
// notation, and its own stderr is no terminal.
func TestWorkerUserSendsTheTerminalNoEscapes(t *testing.T) {
	t.Parallel()
	dir := openDir(t)
	master, pts, held := openPty(t)
	seen := make(chan string, 1)
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil { // EIO once no process holds the terminal
				seen <- string(all)
				return
			}
		}
	}()
	worker := script(t, dir+"/worker.sh", fmt.Sprintf("ATTACKER_MODE=stderr ATTACKER_REPORT='%s/stderr' '%s'\nexec /bin/sleep 60", dir, bins.attacker))
	cmd := exec.Command("/bin/sh", slices.Concat([]string{"-c", `exec "$@" 2>"$0"`, pts, bins.sup, "election", "--worker-user", "nobody", "--share-worker-user"},
		containmentFlags(), []string{"room", "agent", worker, "--", bins.hold, "emit:leader,term=5,budget=20000", "waitfile:" + dir + "/stderr",
			"sleep:200ms", "emit:lost,term=5,reason=lease_not_current"})...)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "XDG_RUNTIME_DIR=")
	r := launch(t, &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1, gsess: make(chan platform.Proc, 1)})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	held.Close()
	var term string
	select {
	case term = <-seen:
	case <-time.After(bound):
		t.Fatal("the terminal was still held open after the run")
	}
	report, err := os.ReadFile(dir + "/stderr")
	require.NoError(t, err)
	t.Logf("the worker's attempts:\n%s\nthe terminal:\n%q", report, term)
	require.Contains(t, term, "worker line on stderr")
	require.Contains(t, term, "^[]0;worker-title^G^[[31mworker-red^[[0m")
	require.NotContains(t, term, "\x1b]0;worker-title")
	require.Contains(t, string(report), "fail TCGETS fd 2")
}

// openPty opens a new pseudo-terminal: its master, its terminal's path, and
// the terminal held open (closed after the run, the master then reads EIO).
func openPty(t *testing.T) (master *os.File, pts string, held *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	require.NoError(t, err)
	pts = fmt.Sprintf("/dev/pts/%d", n)
	held, err = os.OpenFile(pts, os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { held.Close() })
	return master, pts, held
}
