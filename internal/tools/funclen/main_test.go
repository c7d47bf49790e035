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
	at := func(path, rest string) string { return filepath.Join(strings.Split(path, "/")...) + ":" + rest }
	for _, tc := range []struct {
		name   string
		files  map[string]string
		args   []string
		code   int
		out    []string
		stderr string // all of it, when the run fails for length
	}{{
		name: "long only under warn-only directories lists and passes",
		files: map[string]string{
			"cmd/a.go":              short,
			"testbin/b.go":          long,
			"internal/tools/x/c.go": long, // a sub-package is under its parent
			"cmd/x_test.go":         long, // test files are not counted
		},
		args: []string{"-warn-only", "testbin,internal/tools", "./..."},
		code: exitOK,
		out: []string{
			at("internal/tools/x/c.go", "3 Long 81 (warn-only)"),
			at("internal/tools/x/c.go", "87 T.LongM 81 (warn-only)"),
			at("testbin/b.go", "3 Long 81 (warn-only)"),
			at("testbin/b.go", "87 T.LongM 81 (warn-only)"),
		},
	}, {
		name: "long outside warn-only fails, a sibling named like one included",
		files: map[string]string{
			"hold/local/b.go":   long,
			"testbin/c.go":      long,
			"testbinary/d.go":   long, // starts like testbin, is not under it
			"cmd/a.go":          short,
			"internal/x/e.go":   short,
			"hold/local/x_test": long, // not a .go file
		},
		args: []string{"-warn-only", "testbin", "./..."},
		code: exitLong,
		out: []string{
			at("hold/local/b.go", "3 Long 81"),
			at("hold/local/b.go", "87 T.LongM 81"),
			at("testbin/c.go", "3 Long 81 (warn-only)"),
			at("testbin/c.go", "87 T.LongM 81 (warn-only)"),
			at("testbinary/d.go", "3 Long 81"),
			at("testbinary/d.go", "87 T.LongM 81"),
		},
		stderr: "funclen: 4 functions over 80 lines outside testbin; split them\n",
	}, {
		name: "the Makefile's form: one product function among warn-only ones fails",
		files: map[string]string{
			"internal/testkit/vm/a.go": long,
			"internal/holdcli/b.go":    goSource("Long", 81, false),
			"internal/tools/t/c.go":    short,
		},
		args: []string{"-warn-only", "testbin, internal/testkit ,internal/tools", "./..."},
		code: exitLong,
		out: []string{
			at("internal/holdcli/b.go", "3 Long 81"),
			at("internal/testkit/vm/a.go", "3 Long 81 (warn-only)"),
			at("internal/testkit/vm/a.go", "87 T.LongM 81 (warn-only)"),
		},
		stderr: "funclen: 1 function over 80 lines outside testbin, internal/testkit, internal/tools; split them\n",
	}, {
		name:  "without -warn-only every long function fails",
		files: map[string]string{"testbin/b.go": long},
		args:  []string{"./..."},
		code:  exitLong,
		out: []string{
			at("testbin/b.go", "3 Long 81"),
			at("testbin/b.go", "87 T.LongM 81"),
		},
		stderr: "funclen: 2 functions over 80 lines; split them\n",
	}, {
		name:  "testdata and hidden directories are skipped",
		files: map[string]string{"hold/testdata/b.go": long, "hold/.x/b.go": long, "hold/_y/b.go": long, "hold/c.go": short},
		code:  exitOK,
	}, {
		name:  "a lower limit",
		files: map[string]string{"hold/b.go": short, "cmd/a.go": long},
		args:  []string{"-max", "79", "./hold"},
		code:  exitLong,
		out: []string{
			at("hold/b.go", "3 Short 80"),
			at("hold/b.go", "86 T.ShortM 80"),
		},
		stderr: "funclen: 2 functions over 79 lines; split them\n",
	}, {
		name:  "a file that does not parse is a usage error",
		files: map[string]string{"hold/b.go": "package p\nfunc {"},
		args:  []string{"-warn-only", "testbin"},
		code:  exitUsage,
	}, {
		name:  "no Go files is a usage error",
		files: map[string]string{"README": "x"},
		code:  exitUsage,
	}, {
		name:  "the old -fail-under flag is a usage error",
		files: map[string]string{"hold/b.go": short},
		args:  []string{"-fail-under", "hold"},
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
			if code != exitUsage {
				require.Equal(t, tc.stderr, stderr.String())
			}
		})
	}
}
