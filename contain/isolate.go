package contain

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// Isolation separates the worker (only the worker: never the hold, the shims
// or the guardian) from the supervisor side, beyond its container.
type Isolation struct {
	// User runs the worker under another identity, with no supplementary
	// groups, so it can signal, ptrace and open nothing of ours.
	User *WorkerUser `json:"user,omitempty"`
	// CleanEnv gives a worker of our own user the fresh environment a
	// --worker-user worker gets (--clean-env); nil keeps ours (without the
	// holder's secrets). With User, User's own applies.
	CleanEnv *FreshEnv `json:"clean_env,omitempty"`
	// PrivatePids makes the worker's tree a PID namespace of its own, with
	// its own /proc: it sees and signals only itself, and when the
	// namespace's init dies the kernel kills everything left in it.
	PrivatePids bool `json:"private_pids,omitempty"`
	// Scope puts the worker in a Landlock domain that scopes signals and
	// abstract unix sockets (platform.ScopeThread): a worker of the
	// supervisor's own user cannot signal (kill(-1) included), trace or open
	// anything of the supervisor side, which runs outside the domain. The
	// default where the kernel offers it; unprivileged it needs
	// no_new_privs on the worker, which it then sets.
	Scope bool `json:"scope,omitempty"`
	// Unscoped is why Scope is off, for the warning at start; "" when on,
	// or where a same-user worker's signals are no concern (Windows).
	Unscoped string `json:"unscoped,omitempty"`
	// Fence puts the worker behind Landlock file rules that refuse it every
	// write to a cgroup file system, and refuses it clone3, the one way to
	// start a process in another cgroup without such a write (workerFence):
	// it cannot leave its cgroup, lift its limits, or freeze, kill or move
	// anything of its own run or another, even where its user owns those
	// cgroups (systemd's delegation). The default where the kernel offers
	// Landlock file rules; off with --no-worker-scope.
	Fence bool `json:"fence,omitempty"`
	// Unfenced is why Fence is off, for the warning at start; "" when on.
	Unfenced string `json:"unfenced,omitempty"`
}

// waitsAhead reports whether the worker starts through a helper of ours
// that waits, ahead of the gate, in the worker's leaf: its PID-namespace
// init, or the pre-start helper that puts it behind the fence.
func (iso *Isolation) waitsAhead() bool {
	return iso != nil && (iso.PrivatePids || iso.Fence)
}

// UnfencedWarning is what the supervisor says at start when the worker can
// write the cgroup files it can reach by its user; "" when it is fenced.
func (iso Isolation) UnfencedWarning() string {
	if iso.Unfenced == "" {
		return ""
	}
	return "the worker is not fenced from the cgroup file system (" + iso.Unfenced +
		"): whatever cgroups its user may write (all of them as root; under systemd, every run of a same-user supervisor), it may leave, freeze, kill or lift the limits of"
}

// SameUserWarning is what the supervisor says at start when nothing stands
// between a worker of its own user and the supervisor side: no scope, no
// other user, no PID namespace. "" when something does.
func (iso Isolation) SameUserWarning() string {
	if iso.Unscoped == "" || iso.User != nil || iso.PrivatePids {
		return ""
	}
	return "the worker runs as our own user with nothing between it and the supervisor side (" + iso.Unscoped +
		"): it can signal, trace and end every process of ours, kill(-1) included, and outlive them; --private-pids or --worker-user make a boundary"
}

// WorkerUser is the identity --worker-user resolved to, and how the
// worker is set up for it (workeruser.go).
type WorkerUser struct {
	Name string `json:"name"`
	Uid  uint32 `json:"uid"`
	Gid  uint32 `json:"gid"`
	// FreshEnv is the worker's reset environment for this user.
	FreshEnv
	// Share lets other live runs of this host run their workers as this user
	// too, when they also say so (--share-worker-user); otherwise a run
	// refuses a user another one uses (claimWorkerUser).
	Share bool `json:"share,omitempty"`
	// claim is this run's hold on the user on this host (claimWorkerUser),
	// kept open until its worker is proven gone; nil before.
	claim *os.File
}

// IsolationRequest is what the command line asked for.
type IsolationRequest struct {
	WorkerUser  string // USER[:GROUP], names or numeric ids; "" for none
	PrivatePids bool
	NoScope     bool // --no-worker-scope
	// WorkerUserManagerOK accepts a worker user whose service manager runs
	// or who is lingering (--worker-user-manager-ok; usermanager.go).
	WorkerUserManagerOK bool
}

// ErrIsolation marks an isolation request that cannot be honoured (exit 64).
var ErrIsolation = errors.New("worker isolation unavailable")

// ResolveIsolation checks an isolation request before anything starts: every
// refusal names why, and nothing is quietly dropped.
func ResolveIsolation(req IsolationRequest) (Isolation, error) {
	var iso Isolation
	if req.WorkerUser != "" {
		u, err := resolveWorkerUser(req.WorkerUser)
		if err == nil {
			err = checkUserManager("/", systemdHost(), req.WorkerUserManagerOK, u)
		}
		if err != nil {
			return Isolation{}, fmt.Errorf("%w: --worker-user: %w", ErrIsolation, err)
		}
		iso.User = u
	}
	if req.PrivatePids {
		if err := privatePidsProbe(); err != nil {
			return Isolation{}, fmt.Errorf("%w: --private-pids: %w", ErrIsolation, err)
		}
		iso.PrivatePids = true
	}
	iso.Scope, iso.Unscoped = workerScope(req.NoScope)
	iso.Fence, iso.Unfenced = fenceOffered(req.NoScope)
	return iso, nil
}

// resolveWorkerUser looks USER[:GROUP] up. The group defaults to the user's
// primary group. Root and the supervisor's own identity are refused: either
// would leave the worker able to reach everything the isolation is for.
func resolveWorkerUser(spec string) (*WorkerUser, error) {
	if err := workerUserUnsupported(); err != nil {
		return nil, err
	}
	if euid := os.Geteuid(); euid != 0 {
		return nil, fmt.Errorf("the supervisor runs as uid %d; only root can start the worker as another user (run the supervisor as root, or drop --worker-user)", euid)
	}
	name, group, hasGroup := strings.Cut(spec, ":")
	u, err := lookupUser(name)
	if err != nil {
		return nil, err
	}
	uid, err := parseID(u.Uid, "uid of "+name)
	if err != nil {
		return nil, err
	}
	gid, err := parseID(u.Gid, "primary gid of "+name)
	if err != nil {
		return nil, err
	}
	if hasGroup {
		g, err := lookupGroup(group)
		if err != nil {
			return nil, err
		}
		if gid, err = parseID(g.Gid, "gid of "+group); err != nil {
			return nil, err
		}
	}
	switch {
	case uid == 0:
		return nil, fmt.Errorf("%s is root (uid 0): the worker would keep every privilege the isolation takes away; name an unprivileged user", name)
	case int(uid) == os.Getuid() || int(uid) == os.Geteuid():
		return nil, fmt.Errorf("%s (uid %d) is the supervisor's own user: the worker could signal and open its supervisor; name another user", name, uid)
	case gid == 0:
		return nil, fmt.Errorf("group 0 (root) would let the worker reach root's group-owned files; name another group")
	}
	return &WorkerUser{Name: name, Uid: uid, Gid: gid, FreshEnv: FreshEnv{Login: u.Username, Home: u.HomeDir, Shell: loginShell(u.Username)}}, nil
}

// lookupUser finds a user by name, else by uid.
func lookupUser(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if u, err = user.LookupId(name); err != nil {
			return nil, fmt.Errorf("unknown user %q", name)
		}
	}
	return u, nil
}

// lookupGroup finds a group by name, else by gid.
func lookupGroup(name string) (*user.Group, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		if g, err = user.LookupGroupId(name); err != nil {
			return nil, fmt.Errorf("unknown group %q", name)
		}
	}
	return g, nil
}

func parseID(s, what string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("the %s is %q, not a number", what, s)
	}
	return uint32(n), nil
}

// addIsolation says which worker isolation modes this host offers, and why not.
func (d *Diagnosis) addIsolation() {
	switch err := workerUserUnsupported(); {
	case err != nil:
		d.add("isolation --worker-user", false, err.Error())
	case os.Geteuid() != 0:
		d.add("isolation --worker-user", false, fmt.Sprintf("needs the supervisor to run as root (it runs as uid %d)", os.Geteuid()))
	default:
		d.add("isolation --worker-user", true, "the worker can run as another user with no supplementary groups, unable to signal, ptrace or open anything of the supervisor side")
	}
	if err := privatePidsProbe(); err != nil {
		d.add("isolation --private-pids", false, err.Error())
		return
	}
	how := "as root"
	if os.Geteuid() != 0 {
		how = "unprivileged, through a user namespace"
	}
	d.add("isolation --private-pids", true, "the worker can run in a PID namespace of its own with its own /proc ("+how+"): it sees and signals only its own tree")
}

// userSpec is how a helper is told the worker's identity on its command line.
func (u *WorkerUser) spec() string {
	if u == nil {
		return "-"
	}
	return fmt.Sprintf("%d:%d", u.Uid, u.Gid)
}

// parseUserSpec reads spec back; "-" is nil.
func parseUserSpec(s string) (*WorkerUser, error) {
	if s == "-" {
		return nil, nil
	}
	us, gs, ok := strings.Cut(s, ":")
	uid, uerr := strconv.ParseUint(us, 10, 32)
	gid, gerr := strconv.ParseUint(gs, 10, 32)
	if !ok || uerr != nil || gerr != nil {
		return nil, fmt.Errorf("bad worker identity %q", s)
	}
	return &WorkerUser{Name: us, Uid: uint32(uid), Gid: uint32(gid)}, nil
}
