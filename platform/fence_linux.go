package platform

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// LandlockFileRulesABI is the first Landlock ABI whose file rules a fence
// can use: ABI 2 (Linux 5.19) made renames and links across directories
// (LANDLOCK_ACCESS_FS_REFER) grantable. Under ABI 1 every domain with file
// rules refuses them outright, which would break ordinary programs (mv
// between directories), so a fence is not built there.
const LandlockFileRulesABI = 2

// fenceAccess is what a fence handles: writing a file, making and removing
// a directory, and moving or linking across directories. In a cgroup
// filesystem these are every change a process can make (cgroup.procs,
// cgroup.kill, cgroup.freeze, limits, mkdir, rmdir); everything else a
// file system offers (reading, executing, making files and nodes) stays
// unhandled, so no rule is needed for it anywhere. REFER is handled whether
// or not it is listed (the kernel denies it by default in any domain with
// file rules), so it is listed to be grantable.
const fenceAccess = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
	unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REFER

// fenceFileAccess is the part of fenceAccess a rule on a non-directory may
// carry (the kernel refuses directory rights there).
const fenceFileAccess = unix.LANDLOCK_ACCESS_FS_WRITE_FILE

// Fence is a Landlock ruleset, built ahead of the moment it is applied, that
// refuses every change beneath some paths and leaves every other path as it
// was, with a seccomp filter that refuses clone3 (cloneFilter). Landlock only grants, beneath a path: so a fence grants beneath every
// sibling of each fenced path and of each of its ancestors, down from /. What
// it costs elsewhere: a process in it cannot make, remove or move a
// directory directly in / (or in another ancestor of a fenced path), nor
// write a file created directly in one after the fence was built; as for
// every domain with file rules, the kernel also refuses it mount(2) and
// pivot_root(2).
//
// It is written against the raw syscalls rather than go-landlock, which
// applies a ruleset to every thread of the process at the moment it is
// built: a fence is built while a helper waits and is applied to the one
// thread that then execs or forks the worker, leaving the helper itself
// outside.
type Fence struct {
	fd      int
	clone3  unix.SockFprog // the clone3 filter (cloneFilter), assembled
	filter  []unix.SockFilter
	Fenced  []string // the paths no write reaches beneath
	Granted int      // how many rules grant around them
}

// NewFence builds a fence around the given absolute paths.
func NewFence(fenced []string) (*Fence, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: fenceAccess}
	// The attribute's later fields (network, scopes) are zero, which a
	// kernel that knows fewer accepts.
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return nil, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	var err error
	f := &Fence{fd: int(fd), Fenced: fenced}
	if f.filter, err = cloneFilter(); err != nil {
		f.Close()
		return nil, err
	}
	f.clone3 = unix.SockFprog{Len: uint16(len(f.filter)), Filter: &f.filter[0]}
	var grants []string
	grants, err = fenceGrants("/", fenced)
	if err == nil {
		for _, g := range grants {
			if err = f.grant(g); err != nil {
				break
			}
		}
		f.Granted = len(grants)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// grant allows the handled accesses beneath path: all of them for a
// directory, the file ones for anything else. A path gone meanwhile needs
// no rule.
func (f *Fence) grant(path string) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fence: open %s: %w", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("fence: stat %s: %w", path, err)
	}
	access := uint64(fenceAccess)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access = fenceFileAccess
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(f.fd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("fence: landlock_add_rule %s: %w", path, errno)
	}
	return nil
}

// fenceGrants lists what to grant beneath so that every path under dir but
// the fenced ones is covered: each entry of dir that is neither fenced nor
// above a fenced path, and, for an entry above one, the same list of it.
// Symbolic links get no rule: what they point to is covered where it is.
func fenceGrants(dir string, fenced []string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("fence: %w", err)
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case slices.Contains(fenced, p), e.Type()&os.ModeSymlink != 0:
		case slices.ContainsFunc(fenced, func(f string) bool { return strings.HasPrefix(f, p+"/") }):
			below, err := fenceGrants(p, fenced)
			if err != nil {
				return nil, err
			}
			out = append(out, below...)
		default:
			out = append(out, p)
		}
	}
	return out, nil
}

// RestrictThread puts the calling thread, and everything it starts from
// then on, behind the fence: the file rules, and clone3 refused (cloneFilter).
// Without CAP_SYS_ADMIN the kernel requires no_new_privs on the thread first
// (SetNoNewPrivs). The thread cannot leave: call it on a thread that execs
// or is thrown away (runtime.LockOSThread).
func (f *Fence) RestrictThread() error {
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(f.fd), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self (file rules): %w", errno)
	}
	// Loaded by hand, not by seccomp.LoadFilter, which assembles the
	// program again at each load: assembled ahead, the load is all the gate
	// pays (BenchmarkFence).
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&f.clone3))); errno != 0 {
		return fmt.Errorf("seccomp (clone3 refused): %w", errno)
	}
	return nil
}

// Close releases the ruleset; threads already restricted stay so.
func (f *Fence) Close() error { return unix.Close(f.fd) }

// CgroupMounts lists the mount points of every cgroup file system, v1 and
// v2, this process sees (/proc/self/mountinfo), each once.
func CgroupMounts() ([]string, error) {
	file, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var out []string
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || sep+1 >= len(fields) {
			continue
		}
		if t := fields[sep+1]; t != "cgroup" && t != "cgroup2" {
			continue
		}
		if p := unescapeMountPath(fields[4]); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cloneFilter assembles a seccomp filter that makes clone3 fail with ENOSYS
// and lets every other call through. clone3 is the one way to start a process
// in a cgroup of the caller's choosing (CLONE_INTO_CGROUP) without writing a
// cgroup file, so no file rule can stop it, and seccomp cannot look into
// clone3's argument structure to refuse only that flag. ENOSYS, not EPERM:
// it is what C libraries (glibc since 2.34) take as "fall back to clone",
// which has no such flag, so ordinary programs and threads start as before.
// Docker's default profile answers clone3 the same way.
func cloneFilter() ([]unix.SockFilter, error) {
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{{
			Names:  []string{"clone3"},
			Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
		}},
	}
	insts, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assemble the clone3 filter: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("assemble the clone3 filter: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}
