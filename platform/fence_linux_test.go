package platform

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fencedShell runs script with /bin/sh from a thread behind fence (nil: none)
// and returns its combined output.
func fencedShell(t *testing.T, fence *Fence, script string) string {
	t.Helper()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the restricted thread goes with the goroutine
		if err := SetNoNewPrivs(); err != nil {
			done <- result{nil, err}
			return
		}
		if fence != nil {
			if err := fence.RestrictThread(); err != nil {
				done <- result{nil, err}
				return
			}
		}
		out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput()
		done <- result{out, err}
	}()
	r := <-done
	require.NoError(t, r.err, string(r.out))
	return string(r.out)
}

// A fence around the cgroup mounts refuses every change there (a write to a
// cgroup file, mkdir), and leaves the rest of the file system as it was:
// files written, directories made and renamed across directories, threads
// started through the C library's clone3 fallback. Without the fence the
// same changes go through (we are root), so the test can fail.
func TestFenceRefusesCgroupChangesOnly(t *testing.T) {
	if LandlockABI() < LandlockFileRulesABI {
		t.Skipf("Landlock ABI %d: no file rules", LandlockABI())
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to show the cgroup writes go through without the fence")
	}
	mount, err := CgroupV2Mount()
	require.NoError(t, err)
	mounts, err := CgroupMounts()
	require.NoError(t, err)
	require.Contains(t, mounts, mount)
	fence, err := NewFence(mounts)
	require.NoError(t, err)
	defer fence.Close()

	cg := filepath.Join(mount, "fence-test-"+filepath.Base(t.TempDir()))
	require.NoError(t, os.Mkdir(cg, 0o755))
	defer os.Remove(cg)
	work := t.TempDir()
	script := `cd ` + work + ` || exit 9
mkdir a b && echo hi > a/f && mv a/f b/f && cat b/f
{ mkdir ` + cg + `/x && echo MKDIR-OK; } 2>/dev/null
{ echo 0 > ` + cg + `/cgroup.freeze && echo WRITE-OK; } 2>/dev/null
{ echo $$ > ` + cg + `/cgroup.procs && echo MOVE-OK; } 2>/dev/null
python3 -c '
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall(435, None, 0) # clone3(NULL, 0): EINVAL, or ENOSYS behind the filter
print("clone3", os.strerror(ctypes.get_errno()))
t = threading.Thread(target=print, args=("thread",)); t.start(); t.join()'
`
	fenced := fencedShell(t, fence, script)
	require.Equal(t, "hi\nclone3 Function not implemented\nthread\n", fenced, "behind the fence: ordinary work only")

	// The shell moved itself into cg; back to the top before cg is removed.
	open := fencedShell(t, nil, strings.Replace(script, "mkdir a b", "mkdir c d", 1)+"echo $$ > "+mount+"/cgroup.procs\n")
	require.Contains(t, open, "MKDIR-OK", "without the fence the same changes go through")
	require.Contains(t, open, "WRITE-OK")
	require.Contains(t, open, "MOVE-OK")
	require.Contains(t, open, "clone3 Invalid argument")
	require.NoError(t, os.Remove(filepath.Join(cg, "x")))
}

// The fence's grants cover every entry beside a fenced path and its
// ancestors, and nothing at or below it.
func TestFenceGrants(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b/c", "a/b/d", "a/e", "f"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "a/file"), nil, 0o644))
	require.NoError(t, os.Symlink("a/b/c", filepath.Join(root, "link")))
	got, err := fenceGrants(root, []string{filepath.Join(root, "a/b/c")})
	require.NoError(t, err)
	rel := make([]string, len(got))
	for i, g := range got {
		rel[i], _ = filepath.Rel(root, g)
	}
	require.ElementsMatch(t, []string{"a/b/d", "a/e", "a/file", "f"}, rel)
}

func TestUnescapeMountPath(t *testing.T) {
	require.Equal(t, "/a b/c\\d", unescapeMountPath(`/a\040b/c\134d`))
	require.Equal(t, `/x\0`, unescapeMountPath(`/x\0`))
}

// BenchmarkFence: what the fence costs, built ahead and entered at the gate.
func BenchmarkFence(b *testing.B) {
	mounts, err := CgroupMounts()
	require.NoError(b, err)
	b.Run("build", func(b *testing.B) {
		for range b.N {
			f, err := NewFence(mounts)
			require.NoError(b, err)
			f.Close()
		}
	})
	f, err := NewFence(mounts)
	require.NoError(b, err)
	defer f.Close()
	for _, c := range []struct {
		name  string
		enter func() error
	}{{"none", func() error { return nil }}, {"fence", f.RestrictThread}} {
		b.Run("enter-"+c.name, func(b *testing.B) {
			for range b.N {
				done := make(chan error)
				go func() {
					runtime.LockOSThread() // the thread is thrown away with the goroutine
					if err := SetNoNewPrivs(); err != nil {
						done <- err
						return
					}
					done <- c.enter()
				}()
				require.NoError(b, <-done)
			}
		})
	}
}
