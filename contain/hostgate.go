package contain

import (
	"fmt"
	"os"
	"strings"

	"github.com/octostore-supervisor/supervisor/internal/procid"
	"github.com/octostore-supervisor/supervisor/internal/survivor"
	"github.com/octostore-supervisor/supervisor/platform"
)

// Why a worker may not start yet on this host (said once each on stderr).
const (
	waitInterlock = "waiting until the previous holder's worker is proven gone (interlock)"
	waitSurvivors = "waiting until the processes that survived an earlier failed containment of this name are gone"
)

// hostGate stands between authority and a worker start on this host. It
// takes the name's interlock (Config.Interlock), so a second supervisor's
// worker never starts while this one's may live — whatever the authority,
// and even while this supervisor, its guardian and its hold are stopped (the
// kernel keeps their lock) — and it keeps the name blocked while processes
// recorded by a failed containment (Config.Survivors) are alive.
type hostGate struct {
	interlock *os.File
	survivors *survivor.Record
	locked    bool // this run holds the interlock

	// hostLock backs the interlock file with a lock no same-user worker can
	// delete (platform.TryHostLock), keyed by the interlock's path; nil where
	// the platform has none. named: this run holds it.
	hostLock *os.File
	named    bool
}

// open prepares the host lock before the guardian starts, so that the guardian
// inherits the socket and shares the lock taken later.
func (g *hostGate) open() error {
	if g.interlock == nil {
		return nil
	}
	var err error
	g.hostLock, err = platform.OpenHostLock()
	return err
}

// shared is what the guardian keeps open for the run's whole life, so the
// interlock outlives a supervisor that dies until the guardian has contained
// the run.
func (g *hostGate) shared() []*os.File {
	var files []*os.File
	for _, f := range []*os.File{g.interlock, g.hostLock} {
		if f != nil {
			files = append(files, f)
		}
	}
	return files
}

// close lets go of both locks: the file lock explicitly when the run was
// proven contained, otherwise only by closing (the guardian's share keeps it
// until the guardian is done); the host lock is freed when the last socket
// descriptor closes, the guardian's included.
func (g *hostGate) close(provenAll bool) error {
	if g.interlock == nil {
		return nil
	}
	var err error
	if g.locked && provenAll {
		err = platform.UnlockFile(g.interlock)
	}
	g.interlock.Close()
	if g.hostLock != nil {
		g.hostLock.Close()
	}
	return err
}

// lock takes the interlock file and the host lock; false means another run
// holds either.
func (g *hostGate) lock() (bool, error) {
	if !g.locked {
		ok, err := platform.TryLockFile(g.interlock, true)
		if err != nil || !ok {
			return false, err
		}
		g.locked = true
	}
	if g.hostLock != nil && !g.named {
		ok, err := platform.TryHostLock(g.hostLock, g.interlock.Name())
		if err != nil || !ok {
			return false, err
		}
		g.named = true
	}
	return true, nil
}

// blocked reports why the worker may not start yet, "" once it may: the
// interlock is ours and no recorded survivor lives; the record is then
// removed, since nothing it names can run beside our worker any more.
func (g *hostGate) blocked() (string, error) {
	if g.interlock != nil {
		ok, err := g.lock()
		if err != nil {
			return "", fmt.Errorf("the interlock could not be taken: %w", err)
		}
		if !ok {
			return waitInterlock, nil
		}
	}
	why, err := g.survivorsAlive()
	if why != "" || err != nil || g.survivors == nil {
		return why, err
	}
	return "", g.survivors.Remove()
}

// survivorsAlive says which recorded survivors still live ("" when none).
func (g *hostGate) survivorsAlive() (string, error) {
	if g.survivors == nil {
		return "", nil
	}
	ids, err := g.survivors.Survivors()
	if err != nil {
		return "", err
	}
	var alive []string
	for _, id := range ids {
		if id.Alive() {
			alive = append(alive, fmt.Sprintf("pid %d", id.Pid))
		}
	}
	if len(alive) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s (%s; recorded in %s)", waitSurvivors, strings.Join(alive, ", "), g.survivors.Path()), nil
}

// recordSurvivors adds what survived a failed containment; it must run
// before the interlock is let go. It returns what to tell the user.
func (g *hostGate) recordSurvivors(survivors []Survivor) (string, error) {
	if g.survivors == nil {
		return "", nil
	}
	var ids []procid.ID
	for _, s := range survivors {
		if s.Pid > 0 {
			ids = append(ids, procid.ID{Pid: s.Pid, Start: s.Start})
		}
	}
	if len(ids) == 0 {
		return "no survivor could be named, so none was recorded for this host", nil
	}
	if err := g.survivors.Add(ids); err != nil {
		return "", err
	}
	return fmt.Sprintf("this name stays blocked on this host until the survivors are gone (recorded in %s)", g.survivors.Path()), nil
}
