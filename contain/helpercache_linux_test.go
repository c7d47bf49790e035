package contain

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/internal/helperimage"
)

// bundled is a stand-in supervisor binary carrying helper, and where the
// helper is in it.
func bundled(t *testing.T, helper []byte) (*bytes.Reader, helperimage.Image) {
	var b bytes.Buffer
	b.WriteString("\x7fELF the supervisor")
	require.NoError(t, helperimage.Append(&b, helper))
	bin := bytes.NewReader(b.Bytes())
	img, ok, err := helperimage.Find(bin, bin.Size())
	require.NoError(t, err)
	require.True(t, ok)
	return bin, img
}

func TestCachedImageIsWrittenOnceThenShared(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "octostore-supervisor", "helpers")
	bin, img := bundled(t, []byte("the helper's code"))

	first := requireCached(t, bin, img, dir, "the helper's code")
	st, err := os.Stat(first.Name())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o500), st.Mode().Perm())
	for _, d := range []string{dir, filepath.Dir(dir)} {
		st, err := os.Stat(d)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), st.Mode().Perm(), d)
	}

	second, err := cachedImage(bin, img, dir)
	require.NoError(t, err)
	defer second.Close()
	require.Equal(t, first.Name(), second.Name())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "one file per image, no temporary left")
}

// A binary built without make build carries no image: no copy, no
// directory, no error (its helpers start from itself).
func TestCachedImageWithoutBundleIsNone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "octostore-supervisor")
	require.NoError(t, os.WriteFile(path, []byte("\x7fELF a supervisor built with go build alone"), 0o755))
	bin, err := os.Open(path)
	require.NoError(t, err)
	defer bin.Close()
	dir := filepath.Join(t.TempDir(), "never-made")
	f, err := leanFrom(bin, dir)
	require.NoError(t, err)
	require.Nil(t, f)
	require.NoDirExists(t, dir)
}

func TestCachedImageMakesNothingAboveItsTwoDirectories(t *testing.T) {
	requireRoot(t)
	bin, img := bundled(t, []byte("the helper's code"))
	missing := filepath.Join(t.TempDir(), "run")
	_, err := cachedImage(bin, img, filepath.Join(missing, "octostore-supervisor", "helpers"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoDirExists(t, missing, "/run is the system's to make")
}

func TestCachedImageReplacesATemporaryLeftByTheDead(t *testing.T) {
	requireRoot(t)
	bin, img := bundled(t, []byte("the helper's code"))
	dir := filepath.Join(t.TempDir(), "octostore-supervisor", "helpers")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	stale := filepath.Join(dir, sumName(img)+".tmp-"+strconv.Itoa(os.Getpid()))
	require.NoError(t, os.WriteFile(stale, []byte("half a helper"), 0o500))

	requireCached(t, bin, img, dir, "the helper's code")
	require.NoFileExists(t, stale)
}

// requireCached takes img's copy from dir and checks it holds want; the copy
// is closed when the test ends.
func requireCached(t *testing.T, bin *bytes.Reader, img helperimage.Image, dir, want string) *os.File {
	t.Helper()
	f, err := cachedImage(bin, img, dir)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	got, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	require.Equal(t, want, string(got))
	return f
}

func TestCachedImageRefusesWhatRootDidNotWrite(t *testing.T) {
	requireRoot(t)
	bin, img := bundled(t, []byte("the helper's code"))

	t.Run("a directory others may write to", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "octostore-supervisor", "helpers")
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, os.Chmod(dir, 0o777))
		_, err := cachedImage(bin, img, dir)
		require.ErrorContains(t, err, "only root may write to")
		require.ErrorContains(t, err, "remove it")
	})
	t.Run("a directory of another user", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "octostore-supervisor", "helpers")
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, os.Chown(filepath.Dir(dir), 65534, 65534))
		_, err := cachedImage(bin, img, dir)
		require.ErrorContains(t, err, "a directory of root's")
	})
	for name, mode := range map[string]os.FileMode{"a writable image": 0o700, "an image of the wrong size": 0o500} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "octostore-supervisor", "helpers")
			require.NoError(t, os.MkdirAll(dir, 0o700))
			content := "the helper's code"
			if mode == 0o500 {
				content = "something else"
			}
			planted := filepath.Join(dir, sumName(img))
			require.NoError(t, os.WriteFile(planted, []byte(content), mode))
			require.NoError(t, os.Chmod(planted, mode))
			_, err := cachedImage(bin, img, dir)
			require.ErrorContains(t, err, "is not the helper image this binary wrote")
		})
	}
	t.Run("a damaged bundle", func(t *testing.T) {
		data := make([]byte, bin.Size())
		_, err := bin.ReadAt(data, 0)
		require.NoError(t, err)
		data[img.Offset] ^= 0xff // one byte of the helper flipped; the trailer's sum is the old one
		dir := filepath.Join(t.TempDir(), "octostore-supervisor", "helpers")
		_, err = cachedImage(bytes.NewReader(data), img, dir)
		require.ErrorContains(t, err, "damaged")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "nothing is left of the refused copy")
	})
}

func requireRoot(t *testing.T) {
	t.Helper()
	require.Zero(t, os.Geteuid(), "the helper image cache is root's; run the contain tests as root (as CI does)")
}

// noexecDir is a directory on a tmpfs of its own mounted noexec, as systemd
// hosts mount /run; unmounted when the test ends.
func noexecDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV, "size=64m,mode=0755"))
	t.Cleanup(func() { require.NoError(t, unix.Unmount(dir, 0)) })
	return dir
}

// On a host whose /run is noexec the bundled images come from the next cache
// whose file system lets programs execute, and where there is none, from a
// sealed memfd copy: never a path execve refuses. Before, a root supervisor
// in a systemd service exited 70 (the lean image and the guardian: execve:
// permission denied).
func TestBundledImageIsExecutableWhereTheCacheIsNoexec(t *testing.T) {
	requireRoot(t)
	prog, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	bin, img := bundled(t, prog)
	noexec := filepath.Join(noexecDir(t), "octostore-supervisor", "helpers")
	exec := filepath.Join(t.TempDir(), "octostore-supervisor", "helpers")

	t.Run("the next cache", func(t *testing.T) {
		f, err := bundledImage(bin, img, []string{noexec, exec})
		require.NoError(t, err)
		defer f.Close()
		require.Equal(t, filepath.Join(exec, sumName(img)), f.Name())
		require.NoDirExists(t, filepath.Dir(noexec), "nothing is made where nothing may run")
		requireRuns(t, f)
	})
	t.Run("a sealed copy", func(t *testing.T) {
		f, err := bundledImage(bin, img, []string{noexec})
		require.NoError(t, err)
		defer f.Close()
		require.Contains(t, f.Name(), "a sealed memfd copy")
		require.Contains(t, f.Name(), "mounted noexec")
		seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
		require.NoError(t, err)
		require.NotZero(t, seals&unix.F_SEAL_WRITE)
		requireRuns(t, f)
	})
}

// requireRuns executes img through its descriptor, as the supervisor starts
// its helpers.
func requireRuns(t *testing.T, img *os.File) {
	t.Helper()
	cmd := osexec.Command("/proc/self/fd/3")
	cmd.ExtraFiles = []*os.File{img}
	require.NoError(t, cmd.Run())
}
