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
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// containerScript is a CI job's container as Docker, Podman and Kubernetes
// start one, made with util-linux: PID 1 of its own PID, mount and cgroup
// namespace, a cgroup2 of its own mounted read-only, root without
// CAP_SYS_ADMIN. The supervisor runs as PID 1's child; once it has exited,
// PID 1 lists every process still running in the namespace (none may be)
// and exits, and the kernel ends the namespace with it. Its cgroup2 mount
// is a bind remount, never a remount of the superblock, which is the
// host's too.
const containerScript = `set -u
out=$1; shift
mount --make-rprivate /
umount -l /sys/fs/cgroup 2>/dev/null || true
mount -t cgroup2 none /sys/fs/cgroup
[ "${CGROUP_RW:-}" = 1 ] || mount -o bind,remount,ro /sys/fs/cgroup
setpriv --bounding-set -sys_admin --inh-caps -sys_admin -- "$@" >"$out/stdout" 2>"$out/stderr"
echo $? >"$out/rc"
: >"$out/survivors"
for p in /proc/[0-9]*; do
  n=${p#/proc/}
  [ "$n" = 1 ] && continue
  read -r stat <"$p/stat" 2>/dev/null || continue
  case ${stat#*) } in Z*) continue ;; esac
  echo "$stat" >>"$out/survivors"
done
`

// inContainer runs the supervisor with args in a fresh container (a cgroup
// of its own on the host, so the container's cgroup namespace shows only
// it) and returns its exit code, stdout and stderr.
func inContainer(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return inContainerWith(t, false, args...)
}

// inContainerWith is inContainer, with its cgroup2 writable when rw.
func inContainerWith(t *testing.T, rw bool, args ...string) (int, string, string) {
	t.Helper()
	for _, tool := range []string{"unshare", "setpriv"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "util-linux's %s makes the container", tool)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "container.sh")
	require.NoError(t, os.WriteFile(script, []byte(containerScript), 0o755))
	cg := filepath.Join(cgroupMount(t), fmt.Sprintf("octostore-e2e-container-%d-%d", os.Getpid(), time.Now().UnixNano()))
	require.NoError(t, os.Mkdir(cg, 0o755))
	t.Cleanup(func() {
		populated, err := platform.CgroupPopulated(cg)
		require.NoError(t, err)
		require.False(t, populated, "the container's cgroups are empty once its PID 1 is gone")
		removeCgroupTree(t, cg)
	})
	fd, err := unix.Open(cg, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	cmd := exec.Command("unshare", append([]string{"--mount", "--pid", "--cgroup", "--fork", "--mount-proc", "/bin/sh", script, dir, bins.sup}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	if rw {
		cmd.Env = append(cmd.Env, "CGROUP_RW=1")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the container: %s", out)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(b)
	}
	require.Empty(t, read("survivors"), "processes still running in the container after the supervisor exited")
	var rc int
	_, err = fmt.Sscan(read("rc"), &rc)
	require.NoError(t, err)
	return rc, read("stdout"), read("stderr")
}

// Issue 40: in a container without CAP_SYS_ADMIN and with a read-only
// cgroup2, run falls back to process groups and says why, applies the
// worker's Landlock scope and fence under no_new_privs (before, run exited
// 70: landlock_restrict_self was refused), and kills a setsid daemon of the
// command's; what it cannot apply is refused up front (64), naming what is
// missing.
func TestRunInAContainerWithoutCapSysAdmin(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		rc, stdout, stderr := inContainer(t, "run", "--json", "--", "sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & sleep 0.3")
		require.Equal(t, 0, rc, stderr)
		require.Contains(t, stderr, "containment: process-group (cgroup v2 unavailable:")
		require.Contains(t, stderr, "read-only")
		require.Contains(t, stdout, `"exit_code":0`)
		require.Contains(t, stdout, `"proven_empty":true`)
	})
	t.Run("writable cgroup2", func(t *testing.T) {
		t.Parallel()
		rc, stdout, stderr := inContainerWith(t, true, "run", "--json", "--", "sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & sleep 0.3")
		require.Equal(t, 0, rc, stderr)
		require.Contains(t, stderr, "containment: cgroup under /sys/fs/cgroup/octostore-supervisor")
		require.Contains(t, stdout, `"backend":"cgroup","proven_empty":true,"killed":1`)
	})
	t.Run("allow-new-privs", func(t *testing.T) {
		t.Parallel()
		rc, _, stderr := inContainer(t, "run", "--worker-user", "nobody", "--allow-new-privs", "--", "true")
		require.Equal(t, 64, rc, stderr)
		require.Contains(t, stderr, "lacks CAP_SYS_ADMIN")
		require.Contains(t, stderr, "--no-worker-scope")
	})
	t.Run("private-pids", func(t *testing.T) {
		t.Parallel()
		rc, _, stderr := inContainer(t, "run", "--private-pids", "--", "true")
		require.Equal(t, 64, rc, stderr)
		require.Contains(t, stderr, "as root it needs CAP_SYS_ADMIN")
	})
	t.Run("doctor", func(t *testing.T) {
		t.Parallel()
		_, stdout, stderr := inContainer(t, "doctor")
		var scope string
		for _, l := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(l, "worker scope (default)") {
				scope = l
			}
		}
		require.Contains(t, scope, " yes ", "%s%s", stdout, stderr)
		require.Contains(t, scope, "entered under no_new_privs (no CAP_SYS_ADMIN)")
	})
}

// Issue 40: the supervisor as a container's PID 1 (`docker run IMAGE
// octostore-supervisor run -- CMD`) does what an init must: it reaps an
// orphan that is not of its run (one a `docker exec` left behind), forwards
// the engine's SIGTERM to CMD, and exits with CMD's status. (Process
// groups: a run in this PID namespace would be one every other test's
// supervisor saw as made elsewhere.)
func TestRunAsAContainersInit(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command("unshare", "--mount", "--pid", "--fork", "--mount-proc", "--",
		"setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--",
		bins.sup, "run", "--containment", "process-group", "--", "sh", "-c", `trap 'exit 7' TERM; echo $$ >"$0/cmd"; while :; do sleep 0.05; done`, dir)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	require.NoError(t, cmd.Start())
	done := make(chan int, 1)
	go func() {
		_ = cmd.Wait()
		done <- cmd.ProcessState.ExitCode()
	}()
	waitFile(t, filepath.Join(dir, "cmd"), bound)
	var init int
	for _, p := range children(cmd.Process.Pid) {
		init = p.Pid // unshare's one child: the namespace's PID 1, our supervisor
	}
	require.NotZero(t, init)
	// An orphan of a process that entered the namespace from outside: its
	// parent exits at once, and the kernel gives it to PID 1.
	enter := exec.Command("nsenter", "-t", strconv.Itoa(init), "-p", "-m", "--", "sh", "-c", "sleep 0.2 & exit 0")
	require.NoError(t, enter.Run())
	proctest.WaitFor(t, bound, "the orphan to be reaped by the namespace's PID 1", func() bool {
		for _, p := range children(init) {
			if strings.Contains(platform.Cmdline(p.Pid), "sleep") {
				return false
			}
		}
		zombies := 0
		ps, _ := platform.NewProcReader().Descendants(init, nil)
		for _, p := range ps {
			if p.PPid == init && p.Dead() {
				zombies++
			}
		}
		return zombies == 0
	})
	require.NoError(t, syscall.Kill(init, syscall.SIGTERM))
	select {
	case code := <-done:
		require.Equal(t, 7, code, "run exits with CMD's status once CMD took the forwarded TERM")
	case <-time.After(bound):
		require.NoError(t, cmd.Process.Kill())
		t.Fatal("the supervisor as PID 1 did not end after SIGTERM")
	}
}

// A supervisor in a PID namespace of its own that shares our cgroups (a
// container run with the host's cgroup namespace and a writable cgroup2)
// sees none of a live run's pids, so by pid that run looks abandoned. Its
// start-up sweep must leave the run alone, since the run was marked in
// another PID namespace: before, it killed the run's worker and hold.
func TestSweepInAnotherPIDNamespaceLeavesLiveRunsAlone(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	if wantBackend(sc{}) != "cgroup" {
		t.Skip("runs are cgroups only under the cgroup backend")
	}
	r := start(t, sc{worker: "--term-exits --child", hold: []string{"emit:leader,term=7,budget=30000", "forever"}})
	r.waitEvent("leader", bound)
	members := waitPidLines(t, filepath.Join(r.dir, "pids"), 2, bound)
	dir := t.TempDir()
	sweeper := exec.Command("unshare", "--pid", "--fork", "--mount", "--mount-proc", "--", bins.sup, "run", "--", "true")
	sweeper.Env = append(os.Environ(), "TMPDIR="+dir)
	out, err := sweeper.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NotContains(t, string(out), "swept abandoned run", "the run in our PID namespace was swept from another")
	require.Contains(t, string(out), "made by a supervisor in another PID namespace (a container sharing these cgroups), whose pids cannot be judged from here: left alone")
	for _, m := range members {
		require.True(t, m.record().Alive(), "%s %d was killed by a sweep from another PID namespace", m.role, m.pid)
	}
	require.Equal(t, []string{"leader"}, r.events())
	require.NoError(t, syscall.Kill(r.cmd.Process.Pid, syscall.SIGTERM))
	require.NotEqual(t, -1, r.wait(bound))
}
