package contain

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/octostore-supervisor/supervisor/platform"
)

// limitRefused is a resource limit the cgroup found for runs cannot
// enforce, told apart from finding no cgroup at all.
type limitRefused struct{ error }

func (e limitRefused) Unwrap() error { return e.error }

// cgroupLimits takes the request's memory and CPU limits into b, once the
// controllers they need are offered to runs below b.Parent (offered is its
// cgroup.controllers). A limit that could not be enforced is an error naming
// the reason and the fix, never dropped: systemd drops such limits silently
// (a transient unit of a user manager without delegation, systemd#9641), and
// a user would believe the tree bounded.
func cgroupLimits(b *Backend, req BackendRequest, offered []string) error {
	for _, l := range []struct {
		set        bool
		flag, ctrl string
	}{
		{req.MemoryMax > 0, "--memory-max", "memory"},
		{req.CPUMilli > 0, "--cpu-max", "cpu"},
	} {
		if l.set && !slices.Contains(offered, l.ctrl) {
			return fmt.Errorf("%s needs the %s controller, which %s does not offer: %s", l.flag, l.ctrl, b.Parent, controllerFix(*b, l.ctrl))
		}
	}
	if req.MemoryMax > 0 {
		if err := swapAccounted(b.Parent); err != nil {
			return err
		}
	}
	b.MemoryMax, b.CPUMilli, b.Limited = req.MemoryMax, req.CPUMilli, req.limitsAsked()
	return nil
}

// controllerFix says why a controller is missing below b.Parent and what
// gives it: cgroup v1 holding it (a hybrid host); systemd not delegating it,
// where b.Parent is the cgroup systemd delegated; else a cgroup above that
// does not pass it on, which its owner can change.
func controllerFix(b Backend, ctrl string) string {
	above := filepath.Dir(b.Parent)
	systemds := platform.SystemdBooted() && !platform.DelegateMarked(b.Mount, above)
	switch v1, known := v1Hierarchy(ctrl); {
	case !known:
		return "this kernel has no " + ctrl + " controller (not built in, or disabled with cgroup_disable=)"
	case v1:
		return "this host gives it to cgroup v1 (a hybrid hierarchy); boot with systemd.unified_cgroup_hierarchy=1 (or cgroup_no_v1=" + ctrl + ") for cgroup v2"
	case systemds && os.Geteuid() != 0:
		return "systemd did not delegate it to your user's service manager; add it with `systemctl edit user@.service` ([Service] Delegate=pids memory cpu), log in again, or run the supervisor as root"
	case systemds:
		return "systemd did not delegate it to this cgroup; run the supervisor in a unit with Delegate=yes, or let it use its own scope (started with Delegate=yes when our cgroup is not delegated)"
	}
	return fmt.Sprintf("enable it for the cgroups above: echo +%s > %s/cgroup.subtree_control (and in each cgroup above that passes it on no further)", ctrl, above)
}

// v1Hierarchy reads /proc/cgroups: whether the kernel knows ctrl and has it
// enabled, and whether a cgroup v1 hierarchy holds it (a non-zero hierarchy
// id), which keeps it from cgroup v2.
func v1Hierarchy(ctrl string) (v1, known bool) {
	b, err := os.ReadFile("/proc/cgroups")
	if err != nil {
		return false, true
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 4 && f[0] == ctrl {
			return f[1] != "0", f[3] == "1"
		}
	}
	return false, false
}

// swapAccounted refuses a memory limit the tree could pass by swapping: swap
// is on, and cgroups account none of it (the parent has no memory.swap.max;
// the root cgroup has no memory files to look at, and is taken as accounted).
func swapAccounted(parent string) error {
	mount, err := platform.CgroupV2Mount()
	if err != nil || parent == mount {
		return nil
	}
	_, err = os.Stat(filepath.Join(parent, "memory.swap.max"))
	if errors.Is(err, fs.ErrNotExist) && platform.SwapActive() {
		return errors.New("--memory-max cannot keep the worker tree out of swap: swap is on and cgroups do not account it here (no memory.swap.max); boot with swapaccount=1, or turn swap off")
	}
	return nil
}

// leafLimits are the worker leaf's resource limits, as b asks for them.
func leafLimits(b Backend) platform.CgroupLimits {
	return platform.CgroupLimits{MemoryMax: b.MemoryMax, CPUQuotaMicros: b.CPUMilli * platform.CPUPeriodMicros / 1000}
}

// limitStats adds to rep what ended the group, where a limit did: OOM kills
// (memory.events; oom_group_kill counts the group kills memory.oom.group
// makes, oom_kill the processes they took), else forks refused at the process
// limit (pids.events). The counters outlive the processes until the leaf is
// removed.
func limitStats(dir string, rep *Report) {
	if v, err := platform.CgroupCounters(dir, "memory.events", "oom_kill", "oom_group_kill"); err == nil {
		rep.OOMKills = v[0]
		if v[0]+v[1] > 0 {
			rep.LimitHit = LimitMemory
			return
		}
	}
	if v, err := platform.CgroupCounters(dir, "pids.events", "max"); err == nil && v[0] > 0 {
		rep.LimitHit = LimitPids
	}
}

// limitFacts says in doctor which limits runs can have here, by setting each
// in the scratch leaf probeRunCgroup made (leaf, below run), and why not.
func (d *Diagnosis) limitFacts(b Backend, leaf string) {
	offered := controllers(b.Parent)
	// A leaf whose pids.max could not be set was removed again.
	_ = platform.MakeCgroup(b.Top, leaf, 0)
	for _, l := range []struct {
		name, flag, ctrl, what string
		limits                 platform.CgroupLimits
	}{
		{"memory limit", "--memory-max", "memory", "memory.max, memory.swap.max 0 and memory.oom.group 1", platform.CgroupLimits{MemoryMax: 64 << 20}},
		{"cpu limit", "--cpu-max", "cpu", "cpu.max", platform.CgroupLimits{CPUQuotaMicros: platform.CPUPeriodMicros / 2}},
	} {
		if !slices.Contains(offered, l.ctrl) {
			d.add(l.name, false, fmt.Sprintf("%s exits 64 here: no %s controller in %s; %s", l.flag, l.ctrl, b.Parent, controllerFix(b, l.ctrl)))
			continue
		}
		if l.ctrl == "memory" {
			if err := swapAccounted(b.Parent); err != nil {
				d.add(l.name, false, err.Error())
				continue
			}
		}
		if err := platform.SetCgroupLimits(b.Top, leaf, l.limits); err != nil {
			d.add(l.name, false, fmt.Sprintf("%s: setting %s in a scratch leaf failed: %v", l.flag, l.what, err))
			continue
		}
		d.add(l.name, true, fmt.Sprintf("%s sets %s on the worker's cgroup (set in a scratch leaf)", l.flag, l.what))
	}
}
