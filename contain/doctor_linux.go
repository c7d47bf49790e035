package contain

import (
	"fmt"
	"os"
	"os/exec"
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
// there as a run would. It removes what it created, and leaves a cgroup
// delegated to it as it found it (ownCgroupAsFound).
func Doctor(scope ScopeFunc) (d Diagnosis) {
	defer d.ownCgroupAsFound()()

	var uts unix.Utsname
	_ = unix.Uname(&uts)
	d.add("kernel", true, unix.ByteSliceToString(uts.Release[:]))

	d.cgroups(scope)
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
	d.addScope()
	d.addFence()
	d.helperImage()
	d.holdImage()

	b, err := ResolveBackend(BackendRequest{Containment: "auto", Scope: scope})
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
		defer f.Close()
		if err := probeExec(f); err != nil {
			d.add(name, false, f.Name()+" could not be executed: "+err.Error())
			return
		}
		d.add(name, true, "the supervisor continues in, and guardian and shims start from, "+f.Name()+" (executed here), the containment code without the authorities' clients")
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
		defer f.Close()
		if err := probeExec(f); err != nil {
			d.add(name, false, f.Name()+" could not be executed: "+err.Error())
			return
		}
		d.add(name, true, "the embedded hold starts from "+f.Name()+" (executed here), the hold client without the etcd client (an etcd hold starts from this binary)")
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
	var held, notOurs []string
	for _, r := range runs {
		switch {
		case r.NotOurs:
			notOurs = append(notOurs, fmt.Sprintf("%s (%d processes; %s)", r.Dir, r.Processes, r.NotOursWhy()))
		case !r.ProvenEmpty:
			held = append(held, fmt.Sprintf("%s (%d processes)", r.Dir, r.Processes))
		}
	}
	switch {
	case len(notOurs) > 0:
		// Before held runs: a sweep never clears these, so no later look will.
		d.add("abandoned runs", false, strings.Join(notOurs, ", ")+": every sweep of ours leaves them alone; whoever made them removes them")
	case len(held) > 0:
		d.add("abandoned runs", false, strings.Join(held, ", ")+" still hold processes after their supervisor and guardian died; `octostore-supervisor sweep` kills them, waits for the proof and names what is left (a task stuck in the kernel stays until it leaves)")
	case len(runs) > 0:
		d.add("abandoned runs", true, fmt.Sprintf("%d empty, removed by the next start or `octostore-supervisor sweep`", len(runs)))
	default:
		d.add("abandoned runs", true, "none under "+b.Parent)
	}
}

// cgroups says what cgroup v2 offers here, and checks the cgroup runs would
// use by using it (probeRunCgroup).
func (d *Diagnosis) cgroups(scope ScopeFunc) {
	mount, err := platform.CgroupV2Mount()
	if err != nil {
		d.add("cgroup v2", false, err.Error()+": only the process-group backend is possible")
		return
	}
	hybrid := ""
	if v1, _ := filepath.Glob("/sys/fs/cgroup/*/cgroup.clone_children"); len(v1) > 0 {
		hybrid = " (hybrid host: v1 controllers are mounted beside it)"
	}
	d.add("cgroup v2", true, "mounted at "+mount+hybrid)
	d.ownCgroup(mount)
	b, err := ResolveBackend(BackendRequest{Containment: BackendCgroup, Scope: scope})
	if err != nil {
		d.add("cgroup for runs", false, err.Error())
		for _, name := range []string{"pids controller", "memory limit", "cpu limit", "cgroup.kill", "run mark"} {
			d.add(name, false, "not checked: no cgroup we may use")
		}
		return
	}
	d.add("cgroup for runs", true, b.Parent+" ("+b.Note+")")
	d.probeRunCgroup(b)
	d.abandonedRuns(b)
}

// ownCgroup says whether our own cgroup was delegated to us, by systemd's
// rule on a systemd host (its delegate mark), else by ownership.
func (d *Diagnosis) ownCgroup(mount string) {
	const name = "own cgroup delegated"
	own, err := platform.OwnCgroupV2()
	if err != nil {
		d.add(name, false, err.Error())
		return
	}
	dir := filepath.Join(mount, own)
	systemd := platform.SystemdBooted()
	err = platform.Delegated(dir)
	switch {
	case own == "/":
		d.add(name, false, "we run in the root cgroup, which is never delegated")
	case err != nil:
		d.add(name, false, err.Error())
	case systemd && !platform.DelegateMarked(mount, dir):
		d.add(name, false, dir+" is ours to write but systemd did not delegate it (no delegate mark): it is systemd's; runs go to a scope systemd delegates instead, or run us in a unit with Delegate=yes")
	case systemd:
		d.add(name, true, dir+" was delegated to us by systemd (Delegate=yes)")
	default:
		d.add(name, true, dir+" and its cgroup.procs and cgroup.subtree_control are ours and writable (no systemd here)")
	}
}

// ownCgroupAsFound notes our own cgroup and the controllers it passes on to
// its children, and returns the function that puts both back. In a cgroup
// delegated to us, doctor's checks do what a run does: they move every
// process of it into SupervisorLeaf and enable controllers for the runs
// below. A run keeps that for its life, and systemd removes a unit's cgroup
// when the unit stops. A doctor must not keep it: as the ExecStartPre= of a
// Delegate=yes unit it would leave the unit's cgroup with controllers
// enabled, where the no internal process rule then refuses the unit's main
// process (systemd fails it with 219/CGROUP).
func (d *Diagnosis) ownCgroupAsFound() func() {
	mount, err := platform.CgroupV2Mount()
	if err != nil {
		return func() {}
	}
	own, err := platform.OwnCgroupV2()
	if err != nil || own == "/" {
		return func() {}
	}
	dir := filepath.Join(mount, own)
	before, err := platform.SubtreeControllers(dir)
	if err != nil {
		return func() {}
	}
	return func() {
		now, err := platform.OwnCgroupV2()
		if err != nil || filepath.Join(mount, now) != filepath.Join(dir, SupervisorLeaf) {
			return // not moved down by our checks: nothing to put back
		}
		if err := platform.UnvacateCgroup(dir, SupervisorLeaf, before); err != nil {
			d.add("own cgroup left as found", false, err.Error()+"; a process systemd starts in "+dir+" next may be refused")
		}
	}
}

// probeRunCgroup creates a scratch run below b.Parent as a run would (a leaf
// with pids.max where the pids controller is offered), reports what that
// showed, and removes it.
func (d *Diagnosis) probeRunCgroup(b Backend) {
	run := filepath.Join(b.Parent, fmt.Sprintf("doctor-probe-%d", os.Getpid()))
	leaf := filepath.Join(run, groupWorker)
	defer func() { _ = unix.Rmdir(leaf); _ = unix.Rmdir(run) }()
	ctrls := controllers(b.Parent)
	pids := slices.Contains(ctrls, "pids")
	if err := platform.MakeCgroup(b.Top, run, 0); err != nil {
		d.add("pids controller", false, "could not create a cgroup in "+b.Parent+": "+err.Error())
		return
	}
	offered := "controllers offered to runs: [" + strings.Join(ctrls, " ") + "]"
	switch err := platform.MakeCgroup(b.Top, leaf, 1); {
	case !pids:
		d.add("pids controller", false, offered+"; without pids, --max-processes cannot bound a fork storm")
	case err != nil:
		d.add("pids controller", false, offered+"; setting pids.max in a scratch leaf failed: "+err.Error())
	default:
		d.add("pids controller", true, offered+"; pids.max set in a scratch leaf")
	}
	d.limitFacts(b, leaf)
	_, err := os.Stat(filepath.Join(run, "cgroup.kill"))
	d.add("cgroup.kill", err == nil, "atomic kill of a whole cgroup (Linux 5.14); without it the cgroup is frozen, each process killed and the cgroup thawed")
	if err := markRun(run, filepath.Base(run)); err != nil {
		d.add("run mark", false, err.Error()+": runs go unmarked, and no sweep kills or removes what a run leaves when its supervisor and guardian both die")
		return
	}
	d.add("run mark", true, runMarkXattr+" set on a scratch cgroup: sweeps kill and remove only runs so marked, never by name alone")
}

// probeExec executes img through its descriptor, as a run starts it, with no
// arguments it acts on: whether execve takes it is the question, not what it
// then says (it exits at once, with its usage).
func probeExec(img *os.File) error {
	cmd := exec.Command("/proc/self/fd/3")
	cmd.ExtraFiles = []*os.File{img}
	if err := cmd.Start(); err != nil {
		return err
	}
	_ = cmd.Wait()
	return nil
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
