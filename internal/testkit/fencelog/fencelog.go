// Package fencelog is the fenced log the project's safety tests use as their
// oracle: a stand-in for a store that fences writes by term. Every worker of a
// test appends its fencing term ($OCTOSTORE_FENCING_TERM) to one shared file,
// and under an exclusive flock of that file a write whose term is lower than
// the highest one accepted so far is recorded as rejected, as a fenced store
// would refuse a deposed holder's late write. Tests read the log back and
// assert that nothing was rejected.
//
// One line per write, in the order the lock serialized them:
//
//	ok|reject WHAT TERM BOOTTIME_NS PID ROLE
//
// WHAT is what the worker did (start, hb for a heartbeat, stop), BOOTTIME_NS
// the CLOCK_BOOTTIME reading taken under the lock (so it never decreases down
// the file), ROLE a label the worker was given. testbin/attacker and
// testbin/fenceworker write it; reading builds everywhere, appending is
// Linux-only.
//
// Part of the test kit (internal/testkit): for this module's tests and test
// programs only; no product package imports it.
package fencelog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/octostore-supervisor/supervisor/internal/testkit/linefile"
)

// Entry is one line of the log.
type Entry struct {
	OK   bool // false: the write was rejected, a higher term had been accepted
	What string
	Term uint64
	// Boot is the CLOCK_BOOTTIME reading of the write, as a duration since boot.
	Boot time.Duration
	Pid  int
	Role string
}

func (e Entry) String() string {
	verdict := "ok"
	if !e.OK {
		verdict = "reject"
	}
	return fmt.Sprintf("%s %s %d %d %d %s", verdict, e.What, e.Term, e.Boot.Nanoseconds(), e.Pid, e.Role)
}

// Read parses the log at path; a log not created yet holds no entries. On a
// malformed line it returns the well-formed entries together with an error
// naming the first bad line.
func Read(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read fenced log: %w", err)
	}
	out, err := Parse(b)
	if err != nil {
		return out, fmt.Errorf("fenced log %s: %w", path, err)
	}
	return out, nil
}

// Parse parses log lines (see the package comment). A last line without its
// newline is a write still in progress and is left out.
func Parse(b []byte) ([]Entry, error) {
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		b = b[:i+1]
	}
	return linefile.Parse(b, "ok|reject WHAT TERM BOOTTIME_NS PID ROLE", parseLine)
}

func parseLine(l string) (Entry, bool) {
	f := strings.Fields(l)
	if len(f) != 6 || (f[0] != "ok" && f[0] != "reject") {
		return Entry{}, false
	}
	term, err1 := strconv.ParseUint(f[2], 10, 64)
	ns, err2 := strconv.ParseInt(f[3], 10, 64)
	pid, err3 := strconv.Atoi(f[4])
	if err1 != nil || err2 != nil || err3 != nil {
		return Entry{}, false
	}
	return Entry{OK: f[0] == "ok", What: f[1], Term: term, Boot: time.Duration(ns), Pid: pid, Role: f[5]}, true
}
