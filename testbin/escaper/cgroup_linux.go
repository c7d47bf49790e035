package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/octostore-supervisor/supervisor/platform"
)

// cgroupModes says --migrate-cgroup exists: cgroup v2 is Linux only.
const cgroupModes = true

// migrateCgroup tries to move this process out of its cgroup v2: into the
// top of the hierarchy (the cgroup2 mount's root) and, if the kernel
// refuses, into its cgroup's parent. It returns the outcome for the
// --migrate-log line: "ok DEST" or "fail DEST: ERR", DEST being the
// cgroup.procs file written last ("-" if none could be found).
func migrateCgroup() string {
	top, parent, err := migrateTargets()
	if err != nil {
		return "fail -: " + err.Error()
	}
	err1 := joinCgroup(top)
	if err1 == nil {
		return "ok " + top
	}
	if parent == top {
		return fmt.Sprintf("fail %s: %v", top, err1)
	}
	if err2 := joinCgroup(parent); err2 != nil {
		return fmt.Sprintf("fail %s: %v (after %s: %v)", parent, err2, top, err1)
	}
	return "ok " + parent
}

// migrateTargets returns the cgroup.procs files of the top of this
// process's cgroup v2 hierarchy and of its cgroup's parent (the same file
// when the process is at the top).
func migrateTargets() (top, parent string, err error) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	return cgroupTargets(string(cg), string(mi))
}

// cgroupTargets is migrateTargets on the contents of /proc/self/cgroup and
// /proc/self/mountinfo.
func cgroupTargets(cgroup, mountinfo string) (top, parent string, err error) {
	rel, err := ownCgroup2(cgroup)
	if err != nil {
		return "", "", err
	}
	mnt, root, shows, err := cgroup2Mount(rel, mountinfo)
	if err != nil {
		return "", "", err
	}
	top = filepath.Join(mnt, "cgroup.procs")
	if !shows {
		// The cgroup is not below this mount: its parent has no path here.
		return top, top, nil
	}
	// The cgroup as a path below the mount, then its parent.
	sub := strings.TrimPrefix(rel, strings.TrimSuffix(root, "/"))
	parent = filepath.Join(mnt, path.Dir(path.Clean("/"+sub)), "cgroup.procs")
	return top, parent, nil
}

// ownCgroup2 is this process's cgroup v2 path from /proc/self/cgroup: the
// "0::PATH" line, PATH relative to the process's cgroup namespace.
func ownCgroup2(cgroup string) (string, error) {
	for _, l := range strings.Split(cgroup, "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return strings.TrimSuffix(p, " (deleted)"), nil
		}
	}
	return "", errors.New(`no cgroup v2 ("0::") line in /proc/self/cgroup`)
}

// cgroup2Mount finds a cgroup2 mount in mountinfo, preferring one that
// shows cgroup rel and, among those, the one whose root is highest in the
// hierarchy. It returns the mount point, the mount's root within the
// hierarchy and whether rel is below it. The mount point is wherever the
// host put it: /sys/fs/cgroup on pure v2 systems, /sys/fs/cgroup/unified
// on hybrid ones.
func cgroup2Mount(rel, mountinfo string) (mnt, root string, shows bool, err error) {
	found := false
	for _, l := range strings.Split(mountinfo, "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(l, " - ")
		f, fstype := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(fstype) < 1 || fstype[0] != "cgroup2" {
			continue
		}
		r, m := platform.UnescapeMountinfo(f[3]), platform.UnescapeMountinfo(f[4])
		below := r == "/" || rel == r || strings.HasPrefix(rel, r+"/")
		switch {
		case !found, below && !shows, below && shows && len(r) < len(root):
			mnt, root, found, shows = m, r, true, below
		}
	}
	if !found {
		return "", "", false, errors.New("no cgroup2 mount in /proc/self/mountinfo")
	}
	return mnt, root, shows, nil
}

// joinCgroup writes this process's pid into procs (a cgroup.procs file),
// which moves the whole process. The error names the failed step, not the
// path, which the caller reports already.
func joinCgroup(procs string) error {
	f, err := os.OpenFile(procs, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(strconv.Itoa(os.Getpid()))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}
