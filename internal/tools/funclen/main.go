// Command funclen lists the functions and methods in a module's non-test Go
// files that are longer than a limit, and fails when any of them lies outside
// the directories named warn-only: the length rule holds everywhere except
// where a directory is exempted by name.
//
//	go run ./internal/tools/funclen [-max 80] [-warn-only dir[,dir]] [pattern ...]
//
// A pattern is a directory, or a directory followed by /... for it and every
// directory below it (the default is ./...). Every .go file counts whatever
// its build constraint says: a long function is long on every platform.
// Directories named testdata or vendor, or starting with "." or "_", are
// skipped, as the go command skips them.
//
// It prints one line per long function, "path:line name length", sorted by
// path and line; a line for a function under a -warn-only directory (given
// relative to the working directory; a sub-package counts as under it) ends
// in " (warn-only)". It exits 1 if any long function lies outside every
// -warn-only directory (with no -warn-only, if there is any long function at
// all), 64 on a usage error, 0 otherwise. The length counts the lines from
// the func keyword to the closing brace, both included.
//
// A development tool of this module (make vet runs it with the test
// programs and the development tools as warn-only); it exports no Go API and
// its flags may change with the Makefile.
package main

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const (
	exitOK    = 0
	exitLong  = 1
	exitUsage = 64
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// longFunc is one function over the limit.
type longFunc struct {
	path  string // as found from the pattern, in the OS's form
	line  int
	name  string // Recv.Name for a method
	lines int
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("funclen", flag.ContinueOnError)
	fl.SetOutput(stderr)
	limit := fl.Int("max", 80, "longest allowed function, in lines")
	warnOnly := fl.String("warn-only", "", "comma-separated directories in which a long function is listed but is not an error")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	if *limit < 1 {
		fmt.Fprintln(stderr, "funclen: -max must be at least 1")
		return exitUsage
	}
	patterns := fl.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	files, err := goFiles(patterns)
	if err != nil {
		fmt.Fprintf(stderr, "funclen: %v\n", err)
		return exitUsage
	}
	var long []longFunc
	for _, f := range files {
		found, err := longFuncs(f, *limit)
		if err != nil {
			fmt.Fprintf(stderr, "funclen: %v\n", err)
			return exitUsage
		}
		long = append(long, found...)
	}
	sort.Slice(long, func(i, j int) bool {
		if long[i].path != long[j].path {
			return long[i].path < long[j].path
		}
		return long[i].line < long[j].line
	})
	return report(long, *limit, splitDirs(*warnOnly), stdout, stderr)
}

// report prints the long functions, those under a warn-only directory marked
// so, and returns exitLong if any other is among them.
func report(long []longFunc, limit int, warnOnly []string, stdout, stderr io.Writer) int {
	failing := 0
	for _, f := range long {
		mark := ""
		if under(f.path, warnOnly) {
			mark = " (warn-only)"
		} else {
			failing++
		}
		fmt.Fprintf(stdout, "%s:%d %s %d%s\n", f.path, f.line, f.name, f.lines, mark)
	}
	if failing == 0 {
		return exitOK
	}
	noun, where := "functions", ""
	if failing == 1 {
		noun = "function"
	}
	if len(warnOnly) > 0 {
		where = " outside " + strings.Join(warnOnly, ", ")
	}
	fmt.Fprintf(stderr, "funclen: %d %s over %d lines%s; split them\n", failing, noun, limit, where)
	return exitLong
}

// goFiles returns the non-test .go files the patterns name, each once.
func goFiles(patterns []string) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	add := func(path string) {
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") && !seen[path] {
			seen[path] = true
			files = append(files, path)
		}
	}
	for _, p := range patterns {
		dir, recursive := strings.CutSuffix(filepath.ToSlash(p), "/...")
		if dir == "..." {
			dir, recursive = ".", true
		}
		dir = filepath.Clean(filepath.FromSlash(dir))
		if !recursive {
			entries, err := os.ReadDir(dir)
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				if e.Type().IsRegular() {
					add(filepath.Join(dir, e.Name()))
				}
			}
			continue
		}
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != dir && skippedDir(d.Name()) {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				add(path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(files) == 0 {
		return nil, errors.New("no Go files match " + strings.Join(patterns, " "))
	}
	return files, nil
}

func skippedDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// longFuncs parses one file and returns its declared functions longer than limit.
func longFuncs(path string, limit int) ([]longFunc, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var long []longFunc
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
		if n := end.Line - start.Line + 1; n > limit {
			long = append(long, longFunc{path: path, line: start.Line, name: funcName(fn), lines: n})
		}
	}
	return long, nil
}

// funcName is Name for a function and Recv.Name for a method, whatever the
// receiver's pointer or type parameters.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr: // T[E]
			t = x.X
		case *ast.IndexListExpr: // T[K, V]
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		default:
			return fn.Name.Name
		}
	}
}

func splitDirs(list string) []string {
	var dirs []string
	for _, d := range strings.Split(list, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, filepath.ToSlash(filepath.Clean(d)))
		}
	}
	return dirs
}

// under reports whether path lies in one of dirs or below it; "hold" covers
// hold/x.go and hold/local/y.go but not holder/z.go.
func under(path string, dirs []string) bool {
	p := filepath.ToSlash(filepath.Clean(path))
	for _, d := range dirs {
		if d == "." || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
