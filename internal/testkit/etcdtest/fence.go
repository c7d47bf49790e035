package etcdtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/octostore-supervisor/supervisor/internal/testkit/fencelog"
)

// FenceLog is a fenced log (internal/testkit/fencelog) for one test's workers, usually
// testbin/fenceworker, and the safety oracle over it.
type FenceLog struct{ path string }

// NewFenceLog creates an empty fenced log that every user may append to (a
// worker may run as nobody).
func NewFenceLog(t testing.TB) *FenceLog {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "fence.log")
	for _, err := range []error{os.Chmod(dir, 0o777), os.WriteFile(path, nil, 0o666), os.Chmod(path, 0o666)} {
		if err != nil {
			t.Fatalf("fenced log: %v", err)
		}
	}
	return &FenceLog{path: path}
}

// Path is the log's file, for the workers.
func (f *FenceLog) Path() string { return f.path }

// Entries reads the log; a malformed line fails the test.
func (f *FenceLog) Entries(t testing.TB) []fencelog.Entry {
	t.Helper()
	es, err := fencelog.Read(f.path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return es
}

// RequireNoRejects fails the test if the store rejected any write: a worker
// wrote with a term lower than one already accepted, so two ran at once.
func (f *FenceLog) RequireNoRejects(t testing.TB) {
	t.Helper()
	var rejected []string
	for _, e := range f.Entries(t) {
		if !e.OK {
			rejected = append(rejected, e.String())
		}
	}
	if len(rejected) > 0 {
		t.Fatalf("the fenced store rejected %d writes of a deposed term, so two workers ran at once; first: %s",
			len(rejected), strings.Join(rejected[:min(len(rejected), 3)], "; "))
	}
}

// RequireDisjointTerms fails the test unless each term's writes form one run
// of the log, the runs in increasing term order: no write of one term falls
// between two writes of another, so the workers' working intervals never
// overlapped, and a later holder never wrote before an earlier one.
func (f *FenceLog) RequireDisjointTerms(t testing.TB) {
	t.Helper()
	es := f.Entries(t)
	var order []uint64 // each term where its run starts
	for i, e := range es {
		if i > 0 && es[i-1].Term == e.Term {
			continue
		}
		if slices.Contains(order, e.Term) {
			t.Fatalf("term %d wrote again at line %d (%s) after term %d wrote (%s): the workers' intervals overlap",
				e.Term, i+1, e, es[i-1].Term, es[i-1])
		}
		if n := len(order); n > 0 && e.Term < order[n-1] {
			t.Fatalf("term %d started writing at line %d (%s) after the higher term %d", e.Term, i+1, e, order[n-1])
		}
		order = append(order, e.Term)
	}
}

// FirstWrite is the CLOCK_BOOTTIME time (see fencelog.Now) of term's first
// write; it fails the test if term never wrote.
func (f *FenceLog) FirstWrite(t testing.TB, term uint64) time.Duration {
	t.Helper()
	for _, e := range f.Entries(t) {
		if e.Term == term {
			return e.Boot
		}
	}
	t.Fatalf("term %d never wrote to the fenced log", term)
	return 0
}

// Terms lists the terms that wrote, in the order they first wrote.
func (f *FenceLog) Terms(t testing.TB) []uint64 {
	t.Helper()
	var out []uint64
	for _, e := range f.Entries(t) {
		if !slices.Contains(out, e.Term) {
			out = append(out, e.Term)
		}
	}
	return out
}
