package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/platform"
)

// report is what the attacker could and could not do (ATTACKER_REPORT).
type report struct {
	Pid  int    `json:"pid"` // as this process sees itself (1 in a PID namespace of its own)
	UID  int    `json:"uid"`
	Term uint64 `json:"term"`
	// Roots are the fair-game roots it was given; OwnRoot is the one among
	// them that is its own ancestor (0: none it could see).
	Roots   []int `json:"roots"`
	OwnRoot int   `json:"own_root"`
	// Visible counts the processes it could see outside its own tree, fair
	// game or not; Targets are the fair-game ones.
	Visible  int       `json:"visible"`
	Targets  []target  `json:"targets"`
	Attempts []attempt `json:"attempts"`
}

// target is one fair-game process as the attacker scanned it.
type target struct {
	Pid     int    `json:"pid"`
	Comm    string `json:"comm"`
	Root    int    `json:"root"`
	OwnSide bool   `json:"own_side"`
	Hold    bool   `json:"hold"`
	proc    platform.Proc
}

// attempt is one thing tried. Action is stop, resume, open, write, environ
// or file; OK whether it worked; Err why not.
type attempt struct {
	Action  string `json:"action"`
	Pid     int    `json:"pid,omitempty"`
	Comm    string `json:"comm,omitempty"`
	OwnSide bool   `json:"own_side,omitempty"`
	Path    string `json:"path,omitempty"`
	OK      bool   `json:"ok"`
	Err     string `json:"err,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

func (r *report) note(a attempt, err error) {
	a.OK = err == nil
	if err != nil {
		a.Err = err.Error()
	}
	r.Attempts = append(r.Attempts, a)
}

// attack runs the whole attack (see doc.go) and writes the report; the
// forging of renewals goes on in the background for as long as it lives.
func attack(cfg config, term uint64) error {
	roots, err := waitGo(cfg.goFile)
	if err != nil {
		return err
	}
	rep := &report{Pid: os.Getpid(), UID: os.Getuid(), Term: term, Roots: roots}
	pr := platform.NewProcReader()
	targets, err := scan(pr, rep)
	if err != nil {
		return err
	}
	stop(pr, rep, targets)
	own := forge(pr, rep, targets, term)
	readEnviron(pr, rep, targets)
	for _, d := range cfg.stateDirs {
		tamper(rep, d)
	}
	if err := writeReport(cfg.report, rep); err != nil {
		return err
	}
	go keepRenewing(own, term)
	return nil
}

// waitGo waits for the test's go-ahead and reads the fair-game roots from it.
func waitGo(path string) ([]int, error) {
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			var roots []int
			for _, f := range strings.Fields(string(b)) {
				pid, err := strconv.Atoi(f)
				if err != nil || pid <= 0 {
					return nil, fmt.Errorf("%s: bad pid %q", path, f)
				}
				roots = append(roots, pid)
			}
			return roots, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// scan lists the fair-game processes: those whose parent chain reaches a
// root, outside the attacker's own tree.
func scan(pr *platform.ProcReader, rep *report) ([]target, error) {
	pids, err := pr.Pids(nil)
	if err != nil {
		return nil, fmt.Errorf("scan /proc: %w", err)
	}
	procs := make(map[int]platform.Proc, len(pids))
	for _, pid := range pids {
		if p, err := pr.Stat(pid); err == nil && !p.Dead() {
			procs[pid] = p
		}
	}
	self := os.Getpid()
	// chain is pid and its ancestors, as far as this process can see them.
	chain := func(pid int) []int {
		var c []int
		for range 64 {
			p, ok := procs[pid]
			if !ok {
				break
			}
			c = append(c, pid)
			pid = p.PPid
		}
		return c
	}
	rootOf := func(c []int) int {
		for _, pid := range c {
			if slices.Contains(rep.Roots, pid) {
				return pid
			}
		}
		return 0
	}
	rep.OwnRoot = rootOf(chain(self))
	var targets []target
	for pid, p := range procs {
		c := chain(pid)
		if slices.Contains(c, self) {
			continue // its own tree
		}
		rep.Visible++
		root := rootOf(c)
		if root == 0 {
			continue
		}
		targets = append(targets, target{
			Pid: pid, Comm: p.Comm, Root: root, OwnSide: root == rep.OwnRoot,
			Hold: holdArgs(pid) != nil, proc: p,
		})
	}
	slices.SortFunc(targets, func(a, b target) int { return a.Pid - b.Pid })
	rep.Targets = targets
	return targets, nil
}

// stop freezes every target; a rival's processes are thawed again at once
// (the attacker wants the rival to act on its forgeries), its own side's stay
// stopped.
func stop(pr *platform.ProcReader, rep *report, targets []target) {
	for _, t := range targets {
		err := pr.Signal(t.proc, syscall.SIGSTOP)
		rep.note(attempt{Action: "stop", Pid: t.Pid, Comm: t.Comm, OwnSide: t.OwnSide}, err)
		if err == nil && !t.OwnSide {
			rep.note(attempt{Action: "resume", Pid: t.Pid, Comm: t.Comm}, pr.Signal(t.proc, syscall.SIGCONT))
		}
	}
}

// forge opens fd 0, 1 and 2 of every target for writing and writes one forged
// hold line into each that opens: a renewal of its own term on its own side,
// a leadership with a higher term on a rival's. It returns its own side's
// hold stdouts, to keep renewing through.
func forge(pr *platform.ProcReader, rep *report, targets []target, term uint64) []forgery {
	ids := map[int]*holdID{}
	for _, t := range targets {
		if id := holdArgs(t.Pid); id != nil {
			ids[t.Root] = id
		}
	}
	var own []forgery
	for _, t := range targets {
		for fd := range 3 {
			path := fmt.Sprintf("/proc/%d/fd/%d", t.Pid, fd)
			// Non-blocking: opening a pipe whose reader is gone would wait
			// forever, and so would a write into a full one.
			f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err == nil {
				// The pid may have been recycled between the scan and the
				// open: write nothing into a stranger.
				if now, serr := pr.Stat(t.Pid); serr != nil || now.StartTicks != t.proc.StartTicks {
					f.Close()
					f, err = nil, errors.New("process gone before the write")
				}
			}
			rep.note(attempt{Action: "open", Pid: t.Pid, Comm: t.Comm, OwnSide: t.OwnSide, Path: path}, err)
			if err != nil {
				continue
			}
			id := ids[t.Root]
			if id == nil {
				f.Close()
				rep.note(attempt{Action: "write", Pid: t.Pid, Comm: t.Comm, OwnSide: t.OwnSide, Path: path}, errors.New("no hold command line on this side to copy kind and name from"))
				continue
			}
			g := forgery{f: f, id: *id}
			event, forgedTerm := events.Renewed, term
			if !t.OwnSide {
				event, forgedTerm = id.authorityEvent(), term+1000
			}
			err = g.write(event, forgedTerm)
			rep.note(attempt{Action: "write", Pid: t.Pid, Comm: t.Comm, OwnSide: t.OwnSide, Path: path,
				Detail: fmt.Sprintf("%s term %d", event, forgedTerm)}, err)
			if t.OwnSide && t.Hold && fd == 1 && err == nil {
				own = append(own, g)
				continue
			}
			f.Close()
		}
	}
	return own
}

// readEnviron reads every target's environment, looking for the bearer token.
func readEnviron(pr *platform.ProcReader, rep *report, targets []target) {
	for _, t := range targets {
		path := fmt.Sprintf("/proc/%d/environ", t.Pid)
		b, err := os.ReadFile(path)
		a := attempt{Action: "environ", Pid: t.Pid, Comm: t.Comm, OwnSide: t.OwnSide, Path: path}
		if err == nil {
			for _, kv := range bytes.Split(b, []byte{0}) {
				if v, ok := bytes.CutPrefix(kv, []byte("OCTOSTORE_TOKEN=")); ok {
					sum := sha256.Sum256(v)
					a.Detail = "token sha256:" + hex.EncodeToString(sum[:])
				}
			}
		}
		rep.note(a, err)
	}
}

// tamper rewinds, forges or removes every local authority state file under
// dir that it can reach.
func tamper(rep *report, dir string) {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			rep.note(attempt{Action: "file", Path: path, Detail: "walk"}, err)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		switch name := d.Name(); {
		case name == "term":
			// The counter's own format (hold/local.go): 20 digits and "\n".
			rep.note(attempt{Action: "file", Path: path, Detail: "rewind term to 1"}, overwrite(path, fmt.Sprintf("%020d\n", 1)))
		case strings.HasSuffix(name, ".holder"):
			forged := fmt.Sprintf(`{"kind":"election","name":"forged","term":1,"pid":%d,"holder_id":"attacker","acquired_at":"2000-01-01T00:00:00Z","expires_at":"2100-01-01T00:00:00Z"}`, os.Getpid())
			rep.note(attempt{Action: "file", Path: path, Detail: "forge holder record"}, overwrite(path, forged))
		default:
			rep.note(attempt{Action: "file", Path: path, Detail: "unlink"}, os.Remove(path))
		}
		return nil
	})
	if err != nil {
		rep.note(attempt{Action: "file", Path: dir, Detail: "walk"}, err)
	}
}

func overwrite(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeReport(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// keepRenewing forges a renewal of its own term into every own-side hold
// stdout it holds open, once a second, for as long as it lives: the
// supervisor re-arms its deadline on each one it accepts.
func keepRenewing(own []forgery, term uint64) {
	for range time.Tick(time.Second) {
		for i := range own {
			_ = own[i].write(events.Renewed, term)
		}
	}
}

// holdID is what a forged line must repeat for a supervisor to accept it.
type holdID struct{ kind, name, server, candidate string }

func (id holdID) authorityEvent() string {
	if id.kind == string(events.Lock) {
		return events.Acquired
	}
	return events.Leader
}

// holdArgs reads the identity off an embedded hold's command line
// (`octostore-supervisor __octostore-hold KIND hold [flags] -- NAME`); nil
// for any other process.
func holdArgs(pid int) *holdID {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	i := slices.Index(args, "__octostore-hold")
	if i < 0 || i+1 >= len(args) {
		return nil
	}
	id := &holdID{kind: args[i+1]}
	for j := i + 2; j < len(args); j++ {
		next := ""
		if j+1 < len(args) {
			next = args[j+1]
		}
		switch args[j] {
		case "--candidate":
			id.candidate = next
		case "--server":
			id.server = next
		case "--":
			id.name = next
		}
	}
	if id.name == "" {
		return nil
	}
	return id
}

// forgery is one writable descriptor into someone's event stream.
type forgery struct {
	f  *os.File
	id holdID
}

// seq is above anything a real hold prints, and increasing: a supervisor
// requires strictly increasing sequences.
var seq atomic.Uint64

func init() { seq.Store(1 << 40) }

// write forges one fresh authority line with the longest budget the schema
// allows (300 s), stamped now on both clocks the supervisor checks.
func (g forgery) write(event string, term uint64) error {
	now := time.Now()
	cont, err := platform.ContinuousMillis()
	if err != nil {
		return err
	}
	const budgetMs = 300_000
	expires := now.Add(budgetMs * time.Millisecond)
	e := events.HoldEvent{
		Event: events.Event{
			Sequence: seq.Add(1), Event: event, Kind: events.Kind(g.id.kind), Name: g.id.name, Server: g.id.server,
			Term:      &term,
			Authority: &events.Authority{RemainingMs: budgetMs, ObservedUnixMs: uint64(now.UnixMilli()), ObservedContinuousMs: uint64(cont)},
		},
		ExpiresAt:  &expires,
		ObservedAt: now,
	}
	if g.id.kind == string(events.Election) {
		e.CandidateID = &g.id.candidate
	}
	// Only pipes take a deadline; /dev/null and files never block.
	_ = g.f.SetWriteDeadline(time.Now().Add(time.Second))
	_, err = g.f.Write(e.Encode())
	return err
}
