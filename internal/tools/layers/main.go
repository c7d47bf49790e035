// Command layers checks the module's import layering on every target system:
// a product package imports only packages of its own layer or below, and
// never the test kit.
//
//	go run ./internal/tools/layers [-goos linux,windows,darwin]
//
// The layers, from the bottom:
//
//	0  events, platform/..., internal/helperimage   the wire, the OS, the image format
//	1  hold/...                                      the authorities' clients
//	2  contain                                       containment
//	3  cmd/...                                       the binaries and their command lines
//
// The test kit (internal/testkit/...) and the test programs (testbin/...) may
// import the product they test; no product package may import them. The
// development tools (internal/tools/...) are neither and are not checked.
// A package the table does not place is an error, so a new top-level folder
// gets a layer before it gets an import.
//
// It prints one line per violation, "importer -> imported (GOOS)", and exits
// 1 if there is any, 2 if go list fails, 0 otherwise. make vet runs it.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

const module = "github.com/octostore-supervisor/supervisor"

// testOnly is the layer of the test kit and the test programs; toolOnly that
// of the development tools, which nothing checks.
const (
	testOnly = 100
	toolOnly = 200
	unplaced = -1
)

// layers maps a package path relative to the module (a prefix followed by
// "/" covers the packages below it) to its layer. The longest prefix wins.
var layers = map[string]int{
	"events": 0, "platform": 0, "internal/helperimage": 0,
	"hold":             1,
	"contain":          2,
	"cmd":              3,
	"internal/testkit": testOnly, "testbin": testOnly,
	"internal/tools": toolOnly,
}

func main() {
	goos := flag.String("goos", "linux,windows,darwin", "comma-separated target systems to check")
	flag.Parse()
	os.Exit(run(strings.Split(*goos, ","), os.Stdout, os.Stderr))
}

func run(systems []string, stdout, stderr io.Writer) int {
	bad := 0
	for _, goos := range systems {
		edges, err := imports(goos)
		if err != nil {
			fmt.Fprintf(stderr, "layers: go list for %s: %v\n", goos, err)
			return 2
		}
		for _, e := range edges {
			if why := violation(e[0], e[1]); why != "" {
				fmt.Fprintf(stdout, "%s -> %s (%s): %s\n", e[0], e[1], goos, why)
				bad++
			}
		}
	}
	if bad > 0 {
		return 1
	}
	return 0
}

// imports lists every import of one module package by another, as paths
// relative to the module, for one target system. Test files' imports are not
// included: a test may import what it likes.
func imports(goos string) ([][2]string, error) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, errb.String())
	}
	var edges [][2]string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		from, _ := relative(f[0])
		for _, imp := range f[1:] {
			if rel, ok := relative(imp); ok {
				edges = append(edges, [2]string{from, rel})
			}
		}
	}
	return edges, sc.Err()
}

func relative(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// violation says why from may not import to, or returns "".
func violation(from, to string) string {
	lf, lt := layerOf(from), layerOf(to)
	switch {
	case lf == toolOnly, lf == testOnly && lt != unplaced:
		return ""
	case lf == unplaced:
		return "importer has no layer (add it to the table in internal/tools/layers)"
	case lt == unplaced:
		return "imported package has no layer (add it to the table in internal/tools/layers)"
	case lt == testOnly:
		return "a product package imports the test kit"
	case lt == toolOnly:
		return "a product package imports a development tool"
	case lt > lf:
		return fmt.Sprintf("imports upward (layer %d into layer %d)", lf, lt)
	}
	return ""
}

func layerOf(rel string) int {
	best, layer := -1, unplaced
	for prefix, l := range layers {
		if (rel == prefix || strings.HasPrefix(rel, prefix+"/")) && len(prefix) > best {
			best, layer = len(prefix), l
		}
	}
	return layer
}
