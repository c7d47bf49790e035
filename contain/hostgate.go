package contain

import (
	"fmt"
	"os"
	"strings"

	"github.com/octostore-supervisor/supervisor/internal/procid"
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
	survivors SurvivorRecord
	locked    bool // this run holds the interlock
}

// blocked reports why the worker may not start yet, "" once it may: the
// interlock is ours and no recorded survivor lives; the record is then
// removed, since nothing it names can run beside our worker any more.
func (g *hostGate) blocked() (string, error) {
	if g.interlock != nil && !g.locked {
		ok, err := platform.TryLockFile(g.interlock, true)
		if err != nil {
			return "", fmt.Errorf("the interlock could not be taken: %w", err)
		}
		if !ok {
			return waitInterlock, nil
		}
		g.locked = true
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
