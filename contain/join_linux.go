package contain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// intoCgroup spawns a child directly inside the cgroup whose directory fd is
// given (clone3 with CLONE_INTO_CGROUP).
func intoCgroup(fd int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
}

// clone3Refused is how a kernel or seccomp profile refuses clone3: Go has no
// fallback of its own for UseCgroupFD.
func clone3Refused(err error) bool {
	return errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM)
}

// JoinMain is the join helper: `__octostore-join LEAF -- PROGRAM ARGS...`. It
// moves itself into LEAF and only then execs PROGRAM, which therefore never runs
// an instruction outside its cgroup.
func JoinMain(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "octostore-supervisor: join helper: bad arguments")
		return ExitSoftware
	}
	leaf, argv := args[0], args[2:]
	// "0" names the writing process itself.
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte("0"), 0); err != nil {
		fmt.Fprintf(os.Stderr, "octostore-supervisor: join %s: %v\n", leaf, err)
		return ExitSoftware
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	fmt.Fprintf(os.Stderr, "octostore-supervisor: exec %s: %v\n", argv[0], err)
	return ExitSoftware
}

// killLeafDir kills a leaf by its path and waits for it to empty; a shim whose
// guardian is gone uses it to fail closed.
func killLeafDir(dir string, proof time.Duration) ([]int, bool, error) {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return nil, false, err
	}
	empty, err := platform.WaitCgroupEmpty(dir, proof)
	return nil, empty, err
}
