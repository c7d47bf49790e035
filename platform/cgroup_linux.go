package platform

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// CgroupV2Mount returns where the unified (v2) hierarchy is mounted, read from
// /proc/self/mountinfo: /sys/fs/cgroup on a pure v2 host, /sys/fs/cgroup/unified
// on a hybrid one. It is never assumed.
func CgroupV2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, v := range fields {
			if v == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return UnescapeMountinfo(fields[4]), nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read mountinfo: %w", err)
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// UnescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func UnescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + byte(c-'0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// OwnCgroupV2 returns this process's cgroup v2 path relative to the mount ("/"
// for the root), from the "0::" line of /proc/self/cgroup.
func OwnCgroupV2() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("this process is in no cgroup v2 (no 0:: line in /proc/self/cgroup)")
}

// IsCgroupV2 reports an error unless dir is a directory on a cgroup2 filesystem.
func IsCgroupV2(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return fmt.Errorf("%s is not on a cgroup v2 filesystem", dir)
	}
	return nil
}

// Delegated reports an error unless the cgroup dir is delegated to this
// process: the directory, its cgroup.procs and its cgroup.subtree_control are
// owned by our effective uid - systemd's Delegate= chowns exactly these to the
// unit's user - and their owner may write them by mode. Ownership and mode
// decide, not access(2): for root access(2) grants write to everything, so a
// subtree delegated to another user, or a file whose mode withholds writing,
// would pass.
func Delegated(dir string) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if fs.Flags&unix.ST_RDONLY != 0 {
		// What a container engine gives a container without a writable
		// cgroup namespace: owned by root, and no write will succeed.
		return fmt.Errorf("%s is on a read-only mount of cgroup2", dir)
	}
	euid := os.Geteuid()
	for _, p := range []string{dir, filepath.Join(dir, "cgroup.procs"), filepath.Join(dir, "cgroup.subtree_control")} {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if int(st.Uid) != euid {
			return fmt.Errorf("%s is owned by uid %d, not by us (uid %d): not delegated to us", p, st.Uid, euid)
		}
		if st.Mode&unix.S_IWUSR == 0 {
			return fmt.Errorf("%s is not writable by its owner (mode %03o)", p, st.Mode&0o777)
		}
	}
	return nil
}

// CgroupPopulated reads the populated key of dir/cgroup.events: whether any live
// process is in the cgroup or below it.
func CgroupPopulated(dir string) (bool, error) { return cgroupEvent(dir, "populated") }

// cgroupEvent reads a key of dir/cgroup.events (populated, frozen) as a flag.
func cgroupEvent(dir, key string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false, fmt.Errorf("read cgroup.events: %w", err)
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte(key+" ")); ok {
			return string(bytes.TrimSpace(v)) != "0", nil
		}
	}
	return false, fmt.Errorf("%s/cgroup.events has no %s key", dir, key)
}

// WaitCgroupEmpty waits until the kernel reports dir unpopulated, or timeout.
// It returns whether the cgroup was seen empty.
func WaitCgroupEmpty(dir string, timeout time.Duration) (bool, error) {
	return WaitCgroupEvent(dir, "populated", false, timeout)
}

// WaitCgroupEvent waits until key of dir/cgroup.events reads want, or timeout,
// and returns whether it did. The kernel signals every change of cgroup.events
// as a file modification, so it is watched with inotify, as the kernel's own
// cgroup.kill selftest does, instead of sleeping between reads.
func WaitCgroupEvent(dir, key string, want bool, timeout time.Duration) (bool, error) {
	// Most waits are over at once (cgroup.kill has already emptied a small
	// group): no inotify instance for those.
	if v, err := cgroupEvent(dir, key); err != nil || v == want {
		return err == nil, err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return false, fmt.Errorf("inotify_init1: %w", err)
	}
	// Closing an inotify instance that had a watch waits for the kernel's
	// fsnotify marks to be destroyed, an SRCU grace period (inotify_release
	// -> fsnotify_destroy_group -> fsnotify_wait_marks_destroyed): 20 ms on
	// the path from a kill to the terminal line, measured with strace. Nothing
	// waits for the close, so it runs beside the caller.
	defer func() { go unix.Close(fd) }()
	// Watch first, then read, so a change in between is not missed.
	if _, err := unix.InotifyAddWatch(fd, filepath.Join(dir, "cgroup.events"), unix.IN_MODIFY); err != nil {
		return false, fmt.Errorf("watch cgroup.events: %w", err)
	}
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 4096)
	for {
		v, err := cgroupEvent(dir, key)
		if err != nil {
			return false, err
		}
		if v == want {
			return true, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(min(left, time.Second).Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return false, fmt.Errorf("poll inotify: %w", err)
		}
		for {
			if n, err := unix.Read(fd, buf); n <= 0 || err != nil {
				break
			}
		}
	}
}

// Clone3Available probes whether clone3 (and so CLONE_INTO_CGROUP) may be used:
// a call with a zero-sized argument fails with EINVAL when the syscall exists and
// with ENOSYS (or EPERM under some seccomp profiles) when it is refused.
func Clone3Available() error {
	_, _, errno := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
	switch errno {
	case unix.EINVAL, unix.E2BIG, unix.EFAULT:
		return nil
	case 0:
		return errors.New("clone3 probe returned success unexpectedly")
	default:
		return fmt.Errorf("clone3 is refused: %w", errno)
	}
}

// SystemdBooted reports whether systemd is this host's service manager, as
// sd_booted(3) decides it: /run/systemd/system exists.
func SystemdBooted() bool {
	st, err := os.Lstat("/run/systemd/system")
	return err == nil && st.IsDir()
}

// DelegateMarked reports whether systemd marked dir, or a cgroup above it,
// as delegated: it sets the extended attribute trusted.delegate (the system
// manager) or user.delegate (a user's manager, from systemd 251 on) to "1"
// on the cgroup of a unit with Delegate=yes. Below such a cgroup, whoever it
// was delegated to decides; anywhere else on a systemd host, a cgroup we can
// write is still systemd's.
func DelegateMarked(mount, dir string) bool {
	for d := dir; d != mount && strings.HasPrefix(d, mount+"/"); d = filepath.Dir(d) {
		for _, name := range []string{"trusted.delegate", "user.delegate"} {
			buf := make([]byte, 8)
			if n, err := unix.Getxattr(d, name, buf); err == nil && string(buf[:n]) == "1" {
				return true
			}
		}
	}
	return false
}

// vacateTries bounds moveCgroupProcs's rounds: a process that forks while it is
// moved leaves its child behind, found by the next round.
const vacateTries = 100

// VacateCgroup moves every process in dir (not below it) into its child leaf,
// creating leaf, so that dir may pass controllers on to its children: cgroup
// v2 refuses that to a cgroup with processes of its own (the no internal
// process rule), which is why systemd's delegation contract asks the
// delegatee to move itself down first. It returns the processes moved.
func VacateCgroup(dir, leaf string) (int, error) {
	sub := filepath.Join(dir, leaf)
	if err := os.Mkdir(sub, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return 0, fmt.Errorf("create %s: %w", sub, err)
	}
	return moveCgroupProcs(dir, sub)
}

// SubtreeControllers lists the controllers dir passes on to its children
// (its cgroup.subtree_control), as UnvacateCgroup takes them back.
func SubtreeControllers(dir string) ([]string, error) {
	return controllerList(dir, "cgroup.subtree_control")
}

// OfferedControllers lists the controllers dir's parent enables for it (its
// cgroup.controllers): those dir may pass on to its children.
func OfferedControllers(dir string) ([]string, error) {
	return controllerList(dir, "cgroup.controllers")
}

func controllerList(dir, file string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	return strings.Fields(string(b)), err
}

// UnvacateCgroup undoes VacateCgroup and what followed it, in the order
// cgroup v2 allows: it stops passing on the controllers not in keep (a
// cgroup that passes any on may hold no process), moves every process of
// leaf back into dir, and removes leaf. For a process that borrowed a cgroup
// briefly, so that whoever owns it finds it as it was.
func UnvacateCgroup(dir, leaf string, keep []string) error {
	now, err := SubtreeControllers(dir)
	if err != nil {
		return fmt.Errorf("read %s/cgroup.subtree_control: %w", dir, err)
	}
	for _, c := range now {
		if slices.Contains(keep, c) {
			continue
		}
		if err := writeCgroupFile(dir, "cgroup.subtree_control", "-"+c); err != nil {
			return fmt.Errorf("disable %s again in %s: %w", c, dir, err)
		}
	}
	sub := filepath.Join(dir, leaf)
	if _, err := moveCgroupProcs(sub, dir); err != nil {
		return err
	}
	if err := unix.Rmdir(sub); err != nil {
		return fmt.Errorf("remove %s: %w", sub, err)
	}
	return nil
}

// moveCgroupProcs moves every process in from (not below it) into to, and
// returns how many it moved.
func moveCgroupProcs(from, to string) (int, error) {
	moved := 0
	for range vacateTries {
		b, err := os.ReadFile(filepath.Join(from, "cgroup.procs"))
		if err != nil {
			return moved, fmt.Errorf("read %s/cgroup.procs: %w", from, err)
		}
		pids := strings.Fields(string(b))
		if len(pids) == 0 {
			return moved, nil
		}
		for _, pid := range pids {
			// One pid a write, as the kernel takes them; one that exited
			// meanwhile (ESRCH) is gone from dir too.
			if err := writeCgroupFile(to, "cgroup.procs", pid); err != nil && !errors.Is(err, unix.ESRCH) {
				return moved, fmt.Errorf("move process %s into %s: %w", pid, to, err)
			}
			moved++
		}
	}
	return moved, fmt.Errorf("%s still holds processes after %d rounds of moving them into %s", from, vacateTries, to)
}
