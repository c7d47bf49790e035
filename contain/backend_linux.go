package contain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/octostore-supervisor/supervisor/platform"
)

// ErrBackend marks a backend request that cannot be honoured (exit 64).
var ErrBackend = errors.New("containment unavailable")

// ResolveBackend picks the backend. auto prefers a cgroup v2 parent: the one
// given, else our own cgroup when it is delegated to us, else (as root) a
// dedicated octostore-supervisor subtree; without any it falls back to process
// groups and says why. An explicit request that cannot be met is an error.
func ResolveBackend(req BackendRequest) (Backend, error) {
	switch req.Containment {
	case "", "auto", BackendCgroup, BackendProcessGroup:
	case BackendJob:
		return Backend{}, fmt.Errorf("%w: the job backend needs Windows", ErrBackend)
	default:
		return Backend{}, fmt.Errorf("%w: unknown --containment %q (auto, cgroup, process-group, job)", ErrBackend, req.Containment)
	}
	if req.Containment == BackendProcessGroup {
		if req.CgroupParent != "" {
			return Backend{}, fmt.Errorf("%w: --cgroup-parent needs the cgroup backend", ErrBackend)
		}
		if req.limitsAsked() {
			return Backend{}, fmt.Errorf("%w: %s: resource limits need the cgroup backend", ErrBackend, req.limitFlags())
		}
		return Backend{Name: BackendProcessGroup, Note: "requested"}, nil
	}
	b, err := cgroupBackend(req)
	if err == nil {
		return b, nil
	}
	// Anything asked for explicitly is refused rather than quietly dropped.
	var refused limitRefused
	switch {
	case req.Containment == BackendCgroup || req.CgroupParent != "" || errors.As(err, &refused):
		return Backend{}, fmt.Errorf("%w: %w", ErrBackend, err)
	case req.limitsAsked():
		return Backend{}, fmt.Errorf("%w: %s: resource limits need the cgroup backend, unavailable here: %w", ErrBackend, req.limitFlags(), err)
	}
	return Backend{Name: BackendProcessGroup, Note: "cgroup v2 unavailable: " + err.Error()}, nil
}

func cgroupBackend(req BackendRequest) (Backend, error) {
	mount, err := platform.CgroupV2Mount()
	if err != nil {
		return Backend{}, err
	}
	b := Backend{Name: BackendCgroup, Mount: mount}
	if req.CgroupParent != "" {
		b.Parent, b.Note, err = givenParent(mount, req)
	} else {
		b.Parent, b.Note, err = runsParent(mount, req)
	}
	if err != nil {
		return Backend{}, err
	}
	// On a systemd host nothing above the cgroup delegated to us is ours to
	// write, not even where root can.
	b.Top = mount
	if platform.SystemdBooted() {
		b.Top = b.Parent
	}
	if _, err := os.Stat(filepath.Join(b.Parent, "cgroup.freeze")); err != nil && b.Parent != mount {
		return Backend{}, fmt.Errorf("%s has no cgroup.freeze (kernel older than 5.2?)", b.Parent)
	}
	var notes []string
	if err := platform.Clone3Available(); err != nil {
		b.Join = true
		notes = append(notes, "clone3 refused: programs join their leaf through a re-exec")
	}
	if slices.Contains(controllers(b.Parent), "pids") {
		b.PidMax = DefaultMaxProcesses
		if req.MaxSet {
			b.PidMax = req.MaxProcesses
		}
		notes = append(notes, fmt.Sprintf("pids.max %d", b.PidMax))
	} else if req.MaxSet {
		return Backend{}, limitRefused{fmt.Errorf("--max-processes needs the pids controller, which %s does not offer: %s", b.Parent, controllerFix(b, "pids"))}
	} else {
		notes = append(notes, "no pid limit: the pids controller is not available here")
	}
	if err := cgroupLimits(&b, req, controllers(b.Parent)); err != nil {
		return Backend{}, limitRefused{err}
	}
	notes = append(notes, limitNotes(b)...)
	b.Note = strings.Join(append([]string{b.Note}, notes...), "; ")
	return b, nil
}

// givenParent is --cgroup-parent, checked, and vacated where we run in it.
func givenParent(mount string, req BackendRequest) (string, string, error) {
	p := filepath.Clean(req.CgroupParent)
	if !filepath.IsAbs(p) {
		return "", "", fmt.Errorf("--cgroup-parent %s must be an absolute path", req.CgroupParent)
	}
	if st, err := os.Stat(p); err != nil {
		return "", "", fmt.Errorf("--cgroup-parent %s does not exist", p)
	} else if !st.IsDir() {
		return "", "", fmt.Errorf("--cgroup-parent %s is not a directory", p)
	}
	if err := platform.IsCgroupV2(p); err != nil {
		return "", "", fmt.Errorf("--cgroup-parent %w", err)
	}
	if err := platform.Delegated(p); err != nil {
		return "", "", fmt.Errorf("--cgroup-parent %w", err)
	}
	if own, err := platform.OwnCgroupV2(); err == nil && filepath.Join(mount, own) == p {
		return vacated(p, req, "--cgroup-parent")
	}
	return p, "--cgroup-parent", nil
}

// SupervisorLeaf is the cgroup a supervisor moves into below the cgroup
// delegated to it, beside its runs, as systemd's delegation contract
// describes: a cgroup that passes controllers on to its children may hold no
// process itself. Its guardian and shims start there too.
const SupervisorLeaf = "supervisor"

// runsParent is where runs go when no --cgroup-parent was given, and why:
// our own cgroup when it was delegated to us; else, on a systemd host, the
// scope systemd delegates to supervisors (BackendRequest.Scope); else, as
// root on a host without systemd, a dedicated subtree. A cgroup we run in is
// vacated first (VacateCgroup), unless only looking.
func runsParent(mount string, req BackendRequest) (string, string, error) {
	own, err := platform.OwnCgroupV2()
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(mount, own)
	systemd := platform.SystemdBooted()
	delegated := func(d string) bool {
		return d != mount && platform.Delegated(d) == nil && (!systemd || platform.DelegateMarked(mount, d))
	}
	switch {
	case filepath.Base(dir) == SupervisorLeaf && delegated(filepath.Dir(dir)):
		return filepath.Dir(dir), "the cgroup above ours is delegated to us", nil
	case delegated(dir):
		return vacated(dir, req, "our own cgroup is delegated to us")
	case systemd && req.Scope != nil:
		return scopeParent(mount, req)
	case systemd:
		return "", "", fmt.Errorf("our cgroup %s was not delegated to us by systemd (no delegate mark on it); run us in a unit with Delegate=yes, or with systemd-run --scope -p Delegate=yes", own)
	case os.Geteuid() == 0:
		return dedicatedParent(mount)
	}
	return "", "", fmt.Errorf("our cgroup %s is not delegated to us and we are not root", own)
}

// scopeParent is the scope systemd delegates to supervisors, joined (or only
// looked up, req.LookOnly).
func scopeParent(mount string, req BackendRequest) (string, string, error) {
	cg, err := req.Scope(!req.LookOnly)
	if err != nil {
		return "", "", err
	}
	if cg == "" {
		return "", "", ErrNoScope
	}
	return vacated(filepath.Join(mount, cg), req, "a scope systemd delegated to supervisors")
}

// vacated is dir, as the parent of runs, once every process of its own was
// moved into SupervisorLeaf.
func vacated(dir string, req BackendRequest, note string) (string, string, error) {
	if req.LookOnly {
		return dir, note, nil
	}
	if _, err := platform.VacateCgroup(dir, SupervisorLeaf); err != nil {
		return "", "", err
	}
	return dir, note + "; we moved into " + SupervisorLeaf + "/ below it", nil
}

// dedicatedParent is root's own subtree on a host without systemd, where no
// service manager owns the hierarchy.
func dedicatedParent(mount string) (string, string, error) {
	dir := filepath.Join(mount, "octostore-supervisor")
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", "", fmt.Errorf("create %s: %w", dir, err)
	}
	if err := platform.Delegated(dir); err != nil {
		return "", "", err
	}
	return dir, "dedicated subtree (root)", nil
}

// controllers lists the controllers dir is offered; none when that cannot be
// read.
func controllers(dir string) []string {
	c, err := platform.OfferedControllers(dir)
	if err != nil {
		return nil
	}
	return c
}
