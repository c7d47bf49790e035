package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// asNobody runs a shell script as the unprivileged user nobody (root reads
// anything, dumpable or not) and returns its combined output.
func asNobody(t *testing.T, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// supervisorSide lists the supervisor and every helper below it (guardian,
// shims, the embedded hold): everything but the worker's tree.
func supervisorSide(t *testing.T, sup int) []int {
	t.Helper()
	ps, err := platform.NewProcReader().Descendants(sup, nil)
	require.NoError(t, err)
	pids := []int{sup}
	for _, p := range ps {
		if !p.Dead() && strings.Contains(platform.Cmdline(p.Pid), "__octostore-") {
			pids = append(pids, p.Pid)
		}
	}
	return pids
}

// Issue 10 item 2, and issue 32 finding 2 for an explicit hold of ours: the
// supervisor run as nobody, a process of the same user can open no
// /proc/<pid>/environ (nor fd) of the supervisor, the guardian, the shims or
// the hold - each is non-dumpable -, stopping the hold and reopening its
// stdout gets nowhere, and the hold's environment holds no bearer token: it
// was handed over on the hold's stdin. Before, an explicit `octostore lock
// hold` kept the token in its environment and stayed dumpable: a worker read
// the token, took the hold's event socket with pidfd_getfd and forged
// renewals.
func TestHoldNonDumpableTokenFree(t *testing.T) {
	for _, explicit := range []bool{false, true} {
		t.Run(map[bool]string{false: "embedded", true: "explicit octostore"}[explicit], func(t *testing.T) {
			t.Parallel()
			requireHoldSealed(t, explicit)
		})
	}
}

func requireHoldSealed(t *testing.T, explicit bool) {
	url := startAuthority(t)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	require.NoError(t, os.Chmod(dir, 0o777))
	worker := filepath.Join(dir, "worker.sh")
	script := fmt.Sprintf("#!/bin/sh\nexec '%s' --pidfile '%s/pids' --log '%s/log' --term-exits --child\n", bins.esc, dir, dir)
	require.NoError(t, os.WriteFile(worker, []byte(script), 0o755))
	args := append([]string{"lock"}, containmentFlags()...)
	// The fake server is on loopback: the token goes in cleartext by name.
	if explicit {
		args = append(args, "repo/issue-10", "-", worker, "--", bins.octostore, "lock", "hold", "repo/issue-10", "--json", "--server", url)
	} else {
		args = append(args, "--server", url, "repo/issue-10", "-", worker)
	}
	cmd := exec.Command(bins.sup, args...)
	cmd.Env = localEnv("TMPDIR="+dir, "OCTOSTORE_TOKEN=t-e2e", "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	r := launch(t, &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1, gsess: make(chan platform.Proc, 1), sc: sc{uid: nobody}})
	r.waitEvent("acquired", bound)
	waitRecorded(t, dir+"/pids", 2)

	sup := r.cmd.Process.Pid
	hold, err := holdOf(sup)
	if explicit {
		hold, err = explicitHoldOf(sup, bins.octostore)
	}
	require.NoError(t, err)
	side := append(supervisorSide(t, sup), hold.Pid)
	require.GreaterOrEqual(t, len(side), 5, "supervisor, guardian, the worker's shim, the hold (and its shim, or itself twice)")
	var words []string
	for _, p := range side {
		words = append(words, strconv.Itoa(p))
	}
	// The same user's view: every open fails with EACCES.
	out := asNobody(t, `for p; do
	  cat /proc/$p/environ >/dev/null 2>&1 && echo "environ of $p readable"
	  ls /proc/$p/fd >/dev/null 2>&1 && echo "fds of $p listable"
	done; true`, words...)
	require.Empty(t, out, "a same-user process could look into the supervisor side")

	pipe, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", hold.Pid)) // as root
	require.NoError(t, err)
	require.Regexp(t, "^(pipe|socket):", pipe, "the hold's stdout is the event channel")
	out = asNobody(t, `kill -STOP $1 && { printf '%s\n' "$2" >/proc/$1/fd/1 && echo forged; kill -CONT $1; }; true`, strconv.Itoa(hold.Pid), strings.ReplaceAll(forgedLeader, "election", "lock"))
	require.NotContains(t, out, "forged")
	require.Contains(t, out, "Permission denied")

	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", hold.Pid)) // as root
	require.NoError(t, err)
	require.NotContains(t, string(env), "t-e2e", "the bearer token is in the hold's environment")
	require.Contains(t, string(env), "OCTOSTORE_TOKEN_FILE=-\x00")

	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, r.wait(bound), r.stderr())
	require.Equal(t, []string{"acquired", "released"}, r.events())
	require.NotContains(t, r.out.String()+r.stderr(), "t-e2e")
}

// explicitHoldOf finds the explicit hold of the supervisor sup: its one live
// descendant running exe.
func explicitHoldOf(sup int, exe string) (proctest.Record, error) {
	ps, err := platform.NewProcReader().Descendants(sup, nil)
	if err != nil {
		return proctest.Record{}, err
	}
	for _, p := range ps {
		if !p.Dead() && strings.HasPrefix(platform.Cmdline(p.Pid), exe+" ") {
			return proctest.Record{Pid: p.Pid, Start: p.StartTicks, Role: "hold"}, nil
		}
	}
	return proctest.Record{}, fmt.Errorf("supervisor %d has no live hold running %s", sup, exe)
}
