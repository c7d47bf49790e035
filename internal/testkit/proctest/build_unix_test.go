//go:build unix

package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// BuildShared builds once per source content: the same sources find the
// same complete directory, changed ones get another, and a directory anyone
// else could have written is refused rather than run.
func TestBuildShared(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the cache lives in os.TempDir
	mod := t.TempDir()
	write := func(path, src string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(mod, path), []byte(src), 0o644))
	}
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("main.go", "package main\n\nfunc main() { println(\"one\") }\n")
	progs := []Program{{Name: "m", Pkg: "."}}

	dir, err := BuildShared(mod, progs)
	require.NoError(t, err)
	out, err := exec.Command(filepath.Join(dir, "m")).CombinedOutput()
	require.NoError(t, err)
	require.Equal(t, "one\n", string(out))
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "readable by the unprivileged user tests run programs as")

	write("main_test.go", "package main\n")
	again, err := BuildShared(mod, progs)
	require.NoError(t, err)
	require.Equal(t, dir, again, "a test file changes no program")

	write("main.go", "package main\n\nfunc main() { println(\"two\") }\n")
	changed, err := BuildShared(mod, progs)
	require.NoError(t, err)
	require.NotEqual(t, dir, changed, "changed sources are built anew")
	out, err = exec.Command(filepath.Join(changed, "m")).CombinedOutput()
	require.NoError(t, err)
	require.Equal(t, "two\n", string(out))

	require.NoError(t, os.Chmod(changed, 0o777))
	_, err = BuildShared(mod, progs)
	require.ErrorContains(t, err, "refusing the test binary cache")

	_, err = BuildShared(mod, []Program{{Name: "x", Pkg: "./nosuch"}})
	require.ErrorContains(t, err, "go build ./nosuch")
}
