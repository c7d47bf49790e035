package etcdtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Server is one etcd server build a test runs against.
type Server struct {
	Name string // a short label for subtest names: "debian" or "3.6"
	Path string // the etcd binary
}

// Servers lists the server builds every etcd test must run against: Debian's
// etcd (PATH or /usr/bin/etcd) and the pinned 3.6 server that `make etcd36`
// builds to bin/etcd-3.6. A missing one fails the test with the fix.
func Servers(t testing.TB) []Server {
	t.Helper()
	debian, err := exec.LookPath("etcd")
	if err != nil {
		debian = "/usr/bin/etcd"
		if _, err := os.Stat(debian); err != nil {
			t.Fatalf("no etcd server in PATH or at /usr/bin/etcd: run `apt-get install etcd-server etcd-client`")
		}
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("find the module root for bin/etcd-3.6: %v", err)
	}
	v36 := filepath.Join(root, "bin", "etcd-3.6")
	if _, err := os.Stat(v36); err != nil {
		t.Fatalf("no etcd 3.6 server at %s: run `make etcd36` in %s", v36, root)
	}
	return []Server{{Name: "debian", Path: debian}, {Name: "3.6", Path: v36}}
}

// moduleRoot is the nearest directory at or above the working directory (a
// test runs in its package's directory) that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
