package etcdtest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/fencelog"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// recorder is a testing.TB whose Fatalf records the message and ends only
// the goroutine it runs on, so a test can prove that a check fails.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs check against a recorder and returns its Fatalf message, ""
// if it passed.
func failure(t *testing.T, check func(testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.msg
}

// The checks on hand-written logs: each bites on its own fault and passes a
// clean hand-over.
func TestFenceLogChecks(t *testing.T) {
	line := func(ok bool, term uint64, ns int) string {
		return fencelog.Entry{OK: ok, What: "hb", Term: term, Boot: time.Duration(ns), Pid: 100 + int(term), Role: "w"}.String() + "\n"
	}
	for _, tc := range []struct {
		name                string
		log                 string
		rejects, overlapped string // the failure each check must report, "" for none
	}{
		{"clean hand-over", line(true, 3, 1) + line(true, 3, 2) + line(true, 5, 3) + line(true, 5, 4), "", ""},
		{"interleaved terms", line(true, 3, 1) + line(true, 5, 2) + line(true, 3, 3), "", "term 3 wrote again at line 3"},
		{"stale write rejected", line(true, 5, 1) + line(false, 3, 2), "rejected 1 writes", "term 3 started writing at line 2"},
		{"lower term after a higher one", line(true, 5, 1) + line(true, 3, 2), "", "term 3 started writing at line 2 (ok hb 3 2 103 w) after the higher term 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFenceLog(t)
			require.NoError(t, os.WriteFile(f.Path(), []byte(tc.log), 0o666))
			for check, want := range map[string]string{"RequireNoRejects": tc.rejects, "RequireDisjointTerms": tc.overlapped} {
				got := failure(t, map[string]func(testing.TB){"RequireNoRejects": f.RequireNoRejects, "RequireDisjointTerms": f.RequireDisjointTerms}[check])
				if want == "" {
					require.Empty(t, got, check)
				} else {
					require.Contains(t, got, want, check)
				}
			}
		})
	}
}

// Real fenceworkers: a clean hand-over from term 5 to term 7 passes every
// check; a worker with term 6 started after it is rejected on every write.
func TestFenceWorker(t *testing.T) {
	f := NewFenceLog(t)
	hb := func(term uint64) int {
		n := 0
		for _, e := range f.Entries(t) {
			if e.Term == term && e.What == "hb" {
				n++
			}
		}
		return n
	}
	run := func(term uint64, role string) *proctest.Prog {
		return fenceworker.Start(t, "", []string{fmt.Sprintf("OCTOSTORE_FENCING_TERM=%d", term)}, f.Path(), role)
	}
	stop := func(p *proctest.Prog) {
		require.NoError(t, p.Cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, p.ExitCode(t, 10*time.Second), "stderr: %s", p.Stderr)
	}

	w5 := run(5, "a")
	proctest.WaitFor(t, 10*time.Second, "term 5's heartbeats", func() bool { return hb(5) >= 3 })
	stop(w5)
	began, err := fencelog.Now()
	require.NoError(t, err)
	w7 := run(7, "b")
	proctest.WaitFor(t, 10*time.Second, "term 7's heartbeats", func() bool { return hb(7) >= 3 })
	f.RequireNoRejects(t)
	f.RequireDisjointTerms(t)
	require.Equal(t, []uint64{5, 7}, f.Terms(t))
	require.Greater(t, f.FirstWrite(t, 7), began, "term 7's first write comes after term 5 stopped")
	es := f.Entries(t)
	require.Equal(t, "start", es[0].What)
	require.Equal(t, w5.Cmd.Process.Pid, es[0].Pid)
	require.Equal(t, "a", es[0].Role)

	w6 := run(6, "stale")
	proctest.WaitFor(t, 10*time.Second, "term 6's writes", func() bool { return hb(6) >= 3 })
	stop(w6)
	stop(w7)
	for _, e := range f.Entries(t) {
		if e.Term == 6 {
			require.False(t, e.OK, "a term-6 write was accepted after term 7's: %s", e)
		}
	}
	require.Contains(t, failure(t, f.RequireNoRejects), "rejected")
	require.Contains(t, failure(t, f.RequireDisjointTerms), "term 6 started writing")
}

// A worker without a term refuses to start (64), naming the variable.
func TestFenceWorkerUsage(t *testing.T) {
	f := NewFenceLog(t)
	p := fenceworker.Start(t, "", []string{"OCTOSTORE_FENCING_TERM="}, f.Path())
	require.Equal(t, 64, p.ExitCode(t, 10*time.Second))
	require.True(t, strings.Contains(p.Stderr.String(), "OCTOSTORE_FENCING_TERM"), p.Stderr.String())
	require.Empty(t, f.Entries(t))
}
