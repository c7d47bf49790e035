package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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
mount -o bind,remount,ro /sys/fs/cgroup
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
	for _, tool := range []string{"unshare", "setpriv"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "util-linux's %s makes the container", tool)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "container.sh")
	require.NoError(t, os.WriteFile(script, []byte(containerScript), 0o755))
	cg := filepath.Join(cgroupMount(t), fmt.Sprintf("octostore-e2e-container-%d-%d", os.Getpid(), time.Now().UnixNano()))
	require.NoError(t, os.Mkdir(cg, 0o755))
	t.Cleanup(func() { require.NoError(t, unix.Rmdir(cg), "the container's cgroup is empty once its PID 1 is gone") })
	fd, err := unix.Open(cg, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	cmd := exec.Command("unshare", append([]string{"--mount", "--pid", "--cgroup", "--fork", "--mount-proc", "/bin/sh", script, dir, bins.sup}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
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
