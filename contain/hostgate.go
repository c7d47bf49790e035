package contain

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
	"github.com/octostore-supervisor/supervisor/platform/procid"
	"github.com/octostore-supervisor/supervisor/platform/survivor"
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
	// delete (platform.TryHostLock), keyed by hostKey (Config.HostKey, else
	// the interlock's path); nil where the platform has none. named: this
	// run holds it.
	hostLock *os.File
	hostKey  string
	named    bool
	// foreign is the uid of another user's socket found holding the host
	// lock's name, which does not hold this run back (trusted); note is what
	// to say about it, once.
	foreign bool
	note    string
	// trustedAt is when the holder of the name was last found to be ours or
	// root's: asking the kernel again is a dump of every unix socket of the
	// host, so a wait on a trusted holder asks at most every holderRecheck.
	trustedAt time.Time
}

// holderRecheck bounds how often a wait on the host lock asks the kernel who
// holds its name: the one cost is a name squatted after a trusted holder let
// go being found that much later.
const holderRecheck = 100 * time.Millisecond

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
// holds either. The host lock's name is host-wide and anyone can bind it, so
// only a holder of our own uid or root counts (passHolder); another user's
// socket on it is noted and passed: the file lock, in a directory that user
// cannot write, still keeps this user's runs apart.
func (g *hostGate) lock() (bool, error) {
	if !g.locked {
		ok, err := platform.TryLockFile(g.interlock, true)
		if err != nil || !ok {
			return false, err
		}
		g.locked = true
	}
	if g.hostLock == nil || g.named || g.foreign {
		return true, nil
	}
	key := g.hostKey
	if key == "" {
		key = g.interlock.Name()
	}
	ok, err := platform.TryHostLock(g.hostLock, key)
	if err != nil {
		return false, err
	}
	if ok {
		g.named = true
		return true, nil
	}
	return g.passHolder(key)
}

// passHolder says whether this run may pass the socket that holds the host
// lock's name: not while its owner is our uid or root (a run of ours or
// root's whose worker may live) or cannot be told (it let go meanwhile: the
// next attempt binds the name); yes when it is any other user's, who could
// otherwise block any name on the host by binding it first.
func (g *hostGate) passHolder(key string) (bool, error) {
	if time.Since(g.trustedAt) < holderRecheck {
		return false, nil
	}
	uid, known, err := platform.HostLockHolder(key)
	if err != nil {
		return false, fmt.Errorf("who holds the host lock: %w", err)
	}
	if !known || uid == os.Geteuid() || uid == 0 {
		if known {
			g.trustedAt = time.Now()
		}
		return false, nil
	}
	g.foreign = true
	g.note = fmt.Sprintf("the host-wide interlock name of this name is held by uid %d, neither ours nor root: ignored, "+
		"so that no other user can block a name; this run is kept apart from ours by its interlock file only, and not from that user's runs", uid)
	return true, nil
}

// takeNote returns what the gate has to say about its host lock, once.
func (g *hostGate) takeNote() string {
	n := g.note
	g.note = ""
	return n
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
