package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// G1-G3: a signal to the supervisor contains the worker, lets the hold release,
// prints the hold's terminal line and exits 128+signal. A cooperative worker gets
// its TERM and cleans up first.
func TestGSignalsToSupervisor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		code int
	}{{"G1 SIGHUP", syscall.SIGHUP, 129}, {"G2 SIGTERM", syscall.SIGTERM, 143}, {"G3 SIGINT", syscall.SIGINT, 130}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{kind: "lock", worker: "--term-exits --child", hold: []string{"emit:acquired,term=4,budget=20000"}})
			r.waitEvent("acquired", 5*time.Second)
			// acquired means the worker was exec'd; its TERM handler is in place once
			// it has recorded itself and its child.
			waitRecorded(t, r.dir+"/pids", 2)
			require.NoError(t, r.cmd.Process.Signal(c.sig))
			require.Equal(t, c.code, r.wait(bound), r.stderr())
			require.Equal(t, []string{"acquired", "released"}, r.events())
			rel := r.line("released")
			require.EqualValues(t, 4, rel["term"])
			require.Equal(t, "signal", rel["reason_code"])
			cont := rel["containment"].(map[string]any)
			require.Equal(t, true, cont["proven_empty"])
			require.Equal(t, wantBackend(r.sc), cont["backend"])
			log, err := os.ReadFile(filepath.Join(r.dir, "log"))
			require.NoError(t, err)
			require.Contains(t, string(log), "stopped", "the worker's TERM handler ran before the release")
		})
	}
}

// G1 (reference shape): hold and worker both ignore HUP/TERM/INT; SIGHUP still
// ends everything with 129.
func TestG1HangupWithSignalImmuneGroups(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		kind:   "lock",
		flags:  []string{"--release-timeout", "1s"},
		worker: "--ignore-signals --child",
		hold:   []string{"--ignore-signals", "--descendant-marker", "{dir}/hold-child-ran", "--descendant-after", "1h", "emit:acquired,term=4,budget=23000"},
	})
	r.waitEvent("acquired", 5*time.Second)
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGHUP))
	require.Equal(t, 129, r.wait(bound))
	require.Less(t, time.Since(r.began), 10*time.Second)
	require.Equal(t, []string{"acquired"}, r.events(), "a hold that never confirmed its release has no line to print")
	require.Contains(t, r.stderr(), "did not confirm its release")
}

// G2 before authority: the hold exits on TERM without an event; nothing printed.
func TestG2SignalBeforeAuthority(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:waiting"}})
	r.waitEvent("waiting", 5*time.Second)
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, r.wait(bound))
	require.Equal(t, []string{"waiting"}, r.events())
	requireNeverRan(t, r)
}

// G4: signals that arrive while containment runs are ignored: a second Ctrl-C
// cannot abort the teardown or change the outcome.
func TestG4SignalsDuringContainment(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--ignore-signals --tree 20", hold: []string{"emit:leader,term=4,budget=20000"}})
	r.waitEvent("leader", 5*time.Second)
	waitRecorded(t, r.dir+"/pids", 21) // every member ignores TERM before it records itself
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	time.Sleep(200 * time.Millisecond) // inside the 1 s TERM grace of the TERM-immune tree
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGUSR1} {
		require.NoError(t, r.cmd.Process.Signal(s))
	}
	require.Equal(t, 143, r.wait(bound))
	require.Equal(t, []string{"leader", "released"}, r.events())
}

// G5: stray SIGUSR1/USR2/QUIT/PIPE neither kill the supervisor nor change the
// run (the reference took USR1 as guardian loss; here the guardian link is a
// socket, not a signal, so a stray signal means nothing).
func TestG5StraySignalsIgnored(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:leader,term=4,budget=20000", "waitfile:{dir}/go", "emit:lost,term=4,reason=lease_not_current"}})
	r.waitEvent("leader", 5*time.Second)
	for _, s := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGQUIT, syscall.SIGPIPE} {
		require.NoError(t, r.cmd.Process.Signal(s))
	}
	// Time must pass: a stray signal wrongly acted on has a while to end the run.
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, "go"), nil, 0o644))
	require.Equal(t, 20, r.wait(bound))
	require.Equal(t, []string{"leader", "lost"}, r.events())
	require.Equal(t, "lease_not_current", r.line("lost")["reason_code"])
	require.False(t, strings.Contains(r.stderr(), "goroutine "), "no runtime dump")
}
