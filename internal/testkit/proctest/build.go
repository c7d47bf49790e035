package proctest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/octostore-supervisor/supervisor/internal/helperimage"
)

// Program is one helper program for BuildShared: the Go package Pkg (a path
// relative to the module root, as `go build` takes it) built with Tags into
// a binary called Name. Images, if set, are binaries to append to it in that
// order, as `make build` appends cmd/octostore-hold and cmd/octostore-helper to
// the supervisor (internal/helperimage).
type Program struct {
	Name, Pkg, Tags string
	Images          []Image
}

// Image is a binary appended to a Program: the package Pkg built with Tags.
type Image struct{ Pkg, Tags string }

// sharedPrefix names the cache directories of BuildShared in the temporary
// directory.
const sharedPrefix = "octostore-testbins-"

// staleAfter is the age at which another cache directory of ours is removed:
// far longer than any go test run, so a run still using it is never robbed.
const staleAfter = 24 * time.Hour

// BuildShared builds progs (all at once) from the module at root into a
// directory named after a hash of the go command's settings, of progs and of
// every non-test file of the module, and returns that directory. A second go
// test run on the same sources (make test runs the black-box suite twice, once
// per containment backend) finds the binaries there and links nothing.
//
// The directory is made by this user and renamed into place only when every
// build succeeded, so a directory found under the name is complete; one not
// owned by this user, or writable by anyone else, is refused rather than
// trusted, because its programs run as root in the tests. It is mode 0755:
// tests run some of the programs as an unprivileged user. It is left for the
// next run; ours older than a day are removed.
func BuildShared(root string, progs []Program) (string, error) {
	key, err := sourceKey(root, progs)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), sharedPrefix+key)
	pruneShared(dir)
	if err := checkShared(dir, progs); err == nil {
		return dir, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	tmp, err := os.MkdirTemp(os.TempDir(), sharedPrefix+"build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // empty after a successful rename
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := buildAll(root, tmp, progs); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another run built the same sources at the same time and won.
		if err := checkShared(dir, progs); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// buildAll runs one go build per program, concurrently: the links, most of
// the time here, then overlap.
func buildAll(root, dir string, progs []Program) error {
	errs := make([]error, len(progs))
	var wg sync.WaitGroup
	for i, p := range progs {
		wg.Go(func() { errs[i] = build(root, dir, p) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func build(root, dir string, p Program) error {
	out := filepath.Join(dir, p.Name)
	if err := goBuild(root, p.Tags, out, p.Pkg); err != nil {
		return err
	}
	var images []string
	for i, img := range p.Images {
		path := out + ".image" + strconv.Itoa(i)
		defer os.Remove(path)
		if err := goBuild(root, img.Tags, path, img.Pkg); err != nil {
			return err
		}
		images = append(images, path)
	}
	if len(images) == 0 {
		return nil
	}
	return helperimage.AppendFile(out, images...)
}

func goBuild(root, tags, out, pkg string) error {
	cmd := GoBuild("-tags", tags, "-o", out, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return nil
}

// GoBuild is `go build args...` as make build runs it: without cgo, so each
// program a test starts is the static binary users install. A cgo build links
// glibc, whose 8 MB thread stacks and per-thread malloc arenas, dynamic loader
// and libc pages change start-up, exit and memory: a helper's exit took
// several times longer than the static one's (docs/benchmarks.md,
// "What we tried, and what we kept").
func GoBuild(args ...string) *exec.Cmd {
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

// checkShared returns nil if dir is a complete cache directory we can trust,
// an error wrapping fs.ErrNotExist if there is none, and another error if
// something else is there.
func checkShared(dir string, progs []Program) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := ownedNotShared(fi); err != nil {
		return fmt.Errorf("refusing the test binary cache %s: %w; remove it", dir, err)
	}
	for _, p := range progs {
		fi, err := os.Lstat(filepath.Join(dir, p.Name))
		if err != nil {
			return fmt.Errorf("test binary cache %s is incomplete: %w; remove it", dir, err)
		}
		if err := ownedNotShared(fi); err != nil {
			return fmt.Errorf("refusing the test binary %s: %w; remove %s", p.Name, err, dir)
		}
	}
	return nil
}

// pruneShared removes our cache directories other than keep that are older
// than staleAfter; errors are ignored, as a stale cache only costs space.
func pruneShared(keep string) {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), sharedPrefix+"*"))
	for _, d := range old {
		fi, err := os.Lstat(d)
		if d == keep || err != nil || ownedNotShared(fi) != nil || time.Since(fi.ModTime()) < staleAfter {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// sourceKey hashes what the binaries are built from: the go command's
// settings (not CGO_ENABLED, which GoBuild always sets), the programs, and
// every file of the module but its tests (a test file changes no program),
// .git, bin and hidden directories.
func sourceKey(root string, progs []Program) (string, error) {
	h := sha256.New()
	env, err := exec.Command("go", "env", "GOVERSION", "GOFLAGS", "GOOS", "GOARCH", "GOAMD64", "GOEXPERIMENT", "GOTOOLCHAIN").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	h.Write(env)
	fmt.Fprintf(h, "%q\n", progs)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintf(h, "%q\n", rel)
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}
