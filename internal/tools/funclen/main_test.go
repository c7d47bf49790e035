package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goSource is a file of package p with one function of n lines (func line and
// closing brace included) and, when recv is set, one method of n lines.
func goSource(name string, n int, recv bool) string {
	body := strings.Repeat("\t_ = 0\n", n-2)
	src := fmt.Sprintf("package p\n\nfunc %s() {\n%s}\n", name, body)
	if recv {
		src += fmt.Sprintf("\ntype T[E any] struct{}\n\nfunc (t *T[E]) %sM() {\n%s}\n", name, body)
	}
	return src
}

// module writes files (path: content) into a fresh directory and makes it
// the working directory, as make vet runs the check from the module root.
func module(t *testing.T, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for path, src := range files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(src), 0o644))
	}
	t.Chdir(dir)
}

func TestFuncLen(t *testing.T) {
	long, short := goSource("Long", 81, true), goSource("Short", 80, true)
	for _, tc := range []struct {
		name  string
		files map[string]string
		args  []string
		code  int
		out   []string
	}{{
		name: "long only outside hold lists and passes",
		files: map[string]string{
			"cmd/a.go":       long,
			"hold/b.go":      short,
			"holder/c.go":    long, // a sibling whose name starts like hold is not under it
			"hold/x_test.go": long,
		},
		args: []string{"-fail-under", "hold", "./..."},
		code: exitOK,
		out: []string{
			filepath.Join("cmd", "a.go") + ":3 Long 81",
			filepath.Join("cmd", "a.go") + ":87 T.LongM 81",
			filepath.Join("holder", "c.go") + ":3 Long 81",
			filepath.Join("holder", "c.go") + ":87 T.LongM 81",
		},
	}, {
		name:  "long in a package under hold fails",
		files: map[string]string{"hold/local/b.go": long, "cmd/a.go": short},
		args:  []string{"-fail-under", "hold", "./..."},
		code:  exitLong,
		out: []string{
			filepath.Join("hold", "local", "b.go") + ":3 Long 81",
			filepath.Join("hold", "local", "b.go") + ":87 T.LongM 81",
		},
	}, {
		name:  "long in hold without -fail-under lists and passes",
		files: map[string]string{"hold/b.go": long},
		args:  []string{"./..."},
		code:  exitOK,
		out: []string{
			filepath.Join("hold", "b.go") + ":3 Long 81",
			filepath.Join("hold", "b.go") + ":87 T.LongM 81",
		},
	}, {
		name:  "testdata and hidden directories are skipped",
		files: map[string]string{"hold/testdata/b.go": long, "hold/.x/b.go": long, "hold/c.go": short},
		args:  []string{"-fail-under", "hold"},
		code:  exitOK,
	}, {
		name:  "a lower limit",
		files: map[string]string{"hold/b.go": short},
		args:  []string{"-max", "79", "-fail-under", "hold", "./hold"},
		code:  exitLong,
		out: []string{
			filepath.Join("hold", "b.go") + ":3 Short 80",
			filepath.Join("hold", "b.go") + ":86 T.ShortM 80",
		},
	}, {
		name:  "a file that does not parse is a usage error",
		files: map[string]string{"hold/b.go": "package p\nfunc {"},
		args:  []string{"-fail-under", "hold"},
		code:  exitUsage,
	}, {
		name:  "no Go files is a usage error",
		files: map[string]string{"README": "x"},
		code:  exitUsage,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			module(t, tc.files)
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
			var want string
			if len(tc.out) > 0 {
				want = strings.Join(tc.out, "\n") + "\n"
			}
			require.Equal(t, want, stdout.String())
			if code == exitLong {
				require.Contains(t, stderr.String(), "under hold")
			}
		})
	}
}
