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
		if req.MaxSet {
			return Backend{}, fmt.Errorf("%w: --max-processes needs the cgroup backend", ErrBackend)
		}
		return Backend{Name: BackendProcessGroup, Note: "requested"}, nil
	}
	b, err := cgroupBackend(req)
	if err == nil {
		return b, nil
	}
	// Anything asked for explicitly is refused rather than quietly dropped.
	if req.Containment == BackendCgroup || req.CgroupParent != "" || req.MaxSet {
		return Backend{}, fmt.Errorf("%w: %w", ErrBackend, err)
	}
	return Backend{Name: BackendProcessGroup, Note: "cgroup v2 unavailable: " + err.Error()}, nil
}

func cgroupBackend(req BackendRequest) (Backend, error) {
	mount, err := platform.CgroupV2Mount()
	if err != nil {
		return Backend{}, err
	}
	b := Backend{Name: BackendCgroup, Mount: mount}
	switch {
	case req.CgroupParent != "":
		p := filepath.Clean(req.CgroupParent)
		if !filepath.IsAbs(p) {
			return Backend{}, fmt.Errorf("--cgroup-parent %s must be an absolute path", req.CgroupParent)
		}
		if st, err := os.Stat(p); err != nil {
			return Backend{}, fmt.Errorf("--cgroup-parent %s does not exist", p)
		} else if !st.IsDir() {
			return Backend{}, fmt.Errorf("--cgroup-parent %s is not a directory", p)
		}
		if err := platform.IsCgroupV2(p); err != nil {
			return Backend{}, fmt.Errorf("--cgroup-parent %w", err)
		}
		if err := platform.Delegated(p); err != nil {
			return Backend{}, fmt.Errorf("--cgroup-parent %w", err)
		}
		b.Parent, b.Note = p, "--cgroup-parent"
	default:
		own, err := platform.OwnCgroupV2()
		if err != nil {
			return Backend{}, err
		}
		if dir := filepath.Join(mount, own); own != "/" && platform.Delegated(dir) == nil {
			b.Parent, b.Note = dir, "our own cgroup is delegated to us"
		} else if os.Geteuid() == 0 {
			dir := filepath.Join(mount, "octostore-supervisor")
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return Backend{}, fmt.Errorf("create %s: %w", dir, err)
			}
			if err := platform.Delegated(dir); err != nil {
				return Backend{}, err
			}
			b.Parent, b.Note = dir, "dedicated subtree (root)"
		} else {
			return Backend{}, fmt.Errorf("our cgroup %s is not delegated to us and we are not root", own)
		}
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
		return Backend{}, fmt.Errorf("--max-processes needs the pids controller, which %s does not offer", b.Parent)
	} else {
		notes = append(notes, "no pid limit: the pids controller is not available here")
	}
	b.Note = strings.Join(append([]string{b.Note}, notes...), "; ")
	return b, nil
}

func controllers(dir string) []string {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(data))
}
