package contain

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// Doctor reports what this host offers and which backend auto would choose,
// checking each claim by doing it: it executes the helper images from their
// cache, enables a controller in a scratch cgroup, and on a systemd host asks
// for the scope (scope) where our own cgroup was not delegated, moving itself
// there as a run would. It removes what it created.
func Doctor(scope ScopeFunc) Diagnosis {
	var d Diagnosis

	var uts unix.Utsname
	_ = unix.Uname(&uts)
	d.add("kernel", true, unix.ByteSliceToString(uts.Release[:]))

	mount, err := platform.CgroupV2Mount()
	if err != nil {
		d.add("cgroup v2", false, err.Error()+": only the process-group backend is possible")
	} else {
		hybrid := ""
		if v1, _ := filepath.Glob("/sys/fs/cgroup/*/cgroup.clone_children"); len(v1) > 0 {
			hybrid = " (hybrid host: v1 controllers are mounted beside it)"
		}
		d.add("cgroup v2", true, "mounted at "+mount+hybrid)
		own, err := platform.OwnCgroupV2()
		switch {
		case err != nil:
			d.add("own cgroup", false, err.Error())
		case own == "/" && os.Geteuid() == 0:
			d.add("own cgroup delegated", false, "we run in the root cgroup; as root a dedicated octostore-supervisor subtree is used instead")
		case own == "/":
			d.add("own cgroup delegated", false, "we run in the root cgroup and are not root: cgroups are unavailable to us")
		default:
			if err := platform.Delegated(filepath.Join(mount, own)); err != nil {
				d.add("own cgroup delegated", false, err.Error()+"; ask systemd for a delegated scope (systemd-run --user --scope -p Delegate=yes)")
			} else {
				d.add("own cgroup delegated", true, filepath.Join(mount, own)+" and its cgroup.procs and cgroup.subtree_control are ours and writable (Delegate=yes or a cgroup namespace)")
			}
		}
		ctrls := controllers(mount)
		d.add("pids controller", slices.Contains(ctrls, "pids"), "cgroup v2 controllers: ["+strings.Join(ctrls, " ")+"]"+map[bool]string{true: "", false: "; without pids, --max-processes cannot bound a fork storm"}[slices.Contains(ctrls, "pids")])
		if b, err := ResolveBackend(BackendRequest{Containment: BackendCgroup}); err != nil {
			d.add("cgroup.kill", false, "not checked: no cgroup we may use ("+err.Error()+")")
		} else {
			d.add("cgroup.kill", probeKill(mount), "atomic kill of a whole cgroup (Linux 5.14); without it the cgroup is frozen, each process killed and the cgroup thawed")
			d.abandonedRuns(b)
		}
	}
	if err := platform.Clone3Available(); err != nil {
		d.add("clone3 (CLONE_INTO_CGROUP)", false, err.Error()+"; programs enter their cgroup through a re-exec join helper instead")
	} else {
		d.add("clone3 (CLONE_INTO_CGROUP)", true, "workers are born inside their cgroup")
	}
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err != nil {
		d.add("pidfd", false, err.Error()+": signals could reach a recycled pid; the supervisor refuses to run without it")
	} else {
		unix.Close(fd)
		d.add("pidfd", true, "every signal goes through a pidfd checked against the process's start time")
	}
	if err := platform.BecomeSubreaper(); err != nil {
		d.add("child subreaper", false, err.Error())
	} else {
		d.add("child subreaper", true, "orphans re-parent to our shims, so daemons stay in view and zombies are reaped")
	}
	userns := readTrim("/proc/sys/user/max_user_namespaces")
	restricted := readTrim("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1"
	d.add("user namespaces", userns != "" && userns != "0" && !restricted, userNSState()+" (--private-pids needs them when the supervisor is not root)")
	d.addIsolation()
	d.helperImage()
	d.holdImage()

	b, err := ResolveBackend(BackendRequest{Containment: "auto"})
	if err != nil {
		d.Backend, d.Reason = "none", err.Error()
	} else {
		d.Backend, d.Reason = b.Name, b.String()
	}
	return d
}

// helperImage says what a run's supervisor, guardian and shims run
// (SuperviseLean, helperImage).
// As root it writes the image's copy if there is none yet, as a run would.
func (d *Diagnosis) helperImage() {
	const name = "lean helper image"
	if os.Geteuid() != 0 {
		d.add(name, false, "not used by a non-root supervisor: its helpers start from a sealed memfd copy of this whole binary, so they are non-dumpable from their first instruction")
		return
	}
	f, err := leanHelper(helperCaches()...)
	switch {
	case err != nil:
		d.add(name, false, err.Error()+"; helpers start from this whole binary meanwhile")
	case f == nil:
		d.add(name, false, "this binary carries none (built without `make build`): the supervisor, guardian and shims run the whole binary, at about twice the start-up time and memory each")
	default:
		d.add(name, true, "the supervisor continues in, and guardian and shims start from, "+f.Name()+", the containment code without the authorities' clients")
		f.Close()
	}
}

// holdImage says what a run's embedded hold starts from (embeddedHoldImage);
// as root it writes the image's copy if there is none yet, as a run would.
func (d *Diagnosis) holdImage() {
	const name = "hold image"
	if os.Geteuid() != 0 {
		d.add(name, false, "not used by a non-root supervisor: its embedded hold starts from the sealed memfd copy of this whole binary its helpers start from")
		return
	}
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		d.add(name, false, fmt.Sprintf("open this program: %v", err))
		return
	}
	defer self.Close()
	f, err := holdImageFrom(self, helperCaches()...)
	switch {
	case err != nil:
		d.add(name, false, err.Error()+"; the embedded hold starts from this whole binary meanwhile")
	case f == nil:
		d.add(name, false, "this binary carries none (built without `make build`): the embedded hold runs this whole binary, with the etcd client's memory")
	default:
		d.add(name, true, "the embedded hold starts from "+f.Name()+", the hold client without the etcd client (an etcd hold starts from this binary)")
		f.Close()
	}
}

// abandonedRuns lists the runs whose supervisor and guardian are both gone,
// and names those still holding processes: a start-up sweep does not wait for
// them twice, so this is where they stay visible.
func (d *Diagnosis) abandonedRuns(b Backend) {
	runs, err := SweepStale(b, true, 0)
	if err != nil {
		d.add("abandoned runs", false, "could not be listed: "+err.Error())
		return
	}
	var held []string
	for _, r := range runs {
		if !r.ProvenEmpty {
			held = append(held, fmt.Sprintf("%s (%d processes)", r.Dir, r.Processes))
		}
	}
	switch {
	case len(held) > 0:
		d.add("abandoned runs", false, strings.Join(held, ", ")+" still hold processes after their supervisor and guardian died; `octostore-supervisor sweep` kills them, waits for the proof and names what is left (a task stuck in the kernel stays until it leaves)")
	case len(runs) > 0:
		d.add("abandoned runs", true, fmt.Sprintf("%d empty, removed by the next start or `octostore-supervisor sweep`", len(runs)))
	default:
		d.add("abandoned runs", true, "none under "+b.Parent)
	}
}

// probeKill checks for cgroup.kill in the cgroup we would use, creating an empty
// probe child when our own cgroup is the root (which has no cgroup.kill).
func probeKill(mount string) bool {
	b, err := ResolveBackend(BackendRequest{Containment: BackendCgroup})
	if err != nil {
		return false
	}
	if _, err := os.Stat(filepath.Join(b.Parent, "cgroup.kill")); err == nil {
		return true
	}
	probe := filepath.Join(b.Parent, fmt.Sprintf("doctor-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return false
	}
	defer unix.Rmdir(probe)
	_, err = os.Stat(filepath.Join(probe, "cgroup.kill"))
	return err == nil
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
