package contain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// intoCgroup is sys for a child spawned directly inside the cgroup whose
// directory fd is given (clone3 with CLONE_INTO_CGROUP).
func intoCgroup(sys *syscall.SysProcAttr, fd int) *syscall.SysProcAttr {
	c := *sys
	c.UseCgroupFD, c.CgroupFD = true, fd
	return &c
}

// clone3Refused is how a kernel or seccomp profile refuses clone3: Go has no
// fallback of its own for UseCgroupFD.
func clone3Refused(err error) bool {
	return errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM)
}

// JoinMain is the join helper: `__octostore-join LEAF UID:GID|- -- PROGRAM
// ARGS...`. It moves itself into LEAF, takes the worker's identity if one is
// given (with no supplementary groups; only after the move, which needs ours),
// and only then execs PROGRAM, which therefore never runs an instruction
// outside its cgroup or as us.
func JoinMain(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "octostore-supervisor: join helper: "+format+"\n", a...)
		return ExitSoftware
	}
	if len(args) < 4 || args[2] != "--" {
		return fail("bad arguments")
	}
	leaf, argv := args[0], args[3:]
	u, err := parseUserSpec(args[1])
	if err != nil {
		return fail("%v", err)
	}
	// "0" names the writing process itself.
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte("0"), 0); err != nil {
		return fail("join %s: %v", leaf, err)
	}
	if err := takeIdentity(u); err != nil {
		return fail("%v", err)
	}
	err = syscall.Exec(argv[0], argv, os.Environ())
	return fail("exec %s: %v", argv[0], err)
}

// takeIdentity becomes the worker's user, with no supplementary groups: groups,
// then group, then user, since after setuid the others are no longer allowed.
// The syscall package applies each to every thread. nil: stay as we are.
func takeIdentity(u *WorkerUser) error {
	if u == nil {
		return nil
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(int(u.Gid)); err != nil {
		return fmt.Errorf("setgid(%d): %w", u.Gid, err)
	}
	if err := syscall.Setuid(int(u.Uid)); err != nil {
		return fmt.Errorf("setuid(%d): %w", u.Uid, err)
	}
	return nil
}
