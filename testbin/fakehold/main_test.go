//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// keysOf returns the top-level keys of a JSON object in document order.
func keysOf(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	tok, err := dec.Token()
	require.NoError(t, err, line)
	require.Equal(t, json.Delim('{'), tok, line)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err, line)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip), line)
	}
	return keys
}

func decode(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m), line)
	return m
}

func num(t *testing.T, m map[string]any, k string) int64 {
	t.Helper()
	n, ok := m[k].(json.Number)
	require.True(t, ok, "%s is not a JSON number: %#v", k, m[k])
	v, err := n.Int64()
	require.NoError(t, err)
	return v
}

func boottimeMillis(t *testing.T) int64 {
	t.Helper()
	var ts unix.Timespec
	require.NoError(t, unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts))
	return ts.Sec*1000 + ts.Nsec/1_000_000
}

func lines(t *testing.T, rr *proctest.Prog, n int) []string {
	t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		l, ok := rr.NextLine(t, 5*time.Second)
		require.True(t, ok, "stdout ended after %d lines; stderr: %s", i, rr.Stderr)
		out = append(out, l)
	}
	return out
}

var (
	electionBase = []string{"schema_version", "sequence", "event", "kind", "name", "server", "candidate_id"}
	authKeys     = []string{"term", "expires_at", "authority_remaining_ms", "authority_observed_unix_ms", "authority_observed_continuous_ms", "observed_at"}
)

func cat(a ...[]string) []string {
	var out []string
	for _, x := range a {
		out = append(out, x...)
	}
	return out
}

// Key order follows the hold; authority stamps are the wall and
// CLOCK_BOOTTIME readings at emission (bracketed by the test's own readings),
// shifted by wall_age/cont_age/future exactly.
func TestEmitKeyOrderAndStamps(t *testing.T) {
	wall0, cont0 := time.Now().UnixMilli(), boottimeMillis(t)
	rr := fakehold.Start(t, "", nil, "--name", "room-1", "--candidate", "agent-a", "--server", "http://127.0.0.1:9",
		"emit:waiting", "emit:leader,term=7,budget=5000",
		"emit:renewed,budget=4000,wall_age=1000,cont_age=2000", "emit:renewed,budget=3000,future=60000", "exit:0")
	ls := lines(t, rr, 4)
	require.Equal(t, 0, rr.ExitCode(t, 5*time.Second))
	wall1, cont1 := time.Now().UnixMilli(), boottimeMillis(t)
	require.Less(t, wall1-wall0, int64(1000), "test too slow for 1 s bounds")

	assert.Equal(t, cat(electionBase, []string{"retry_after_ms", "reason_code", "observed_at"}), keysOf(t, ls[0]))
	w := decode(t, ls[0])
	assert.Equal(t, int64(1), num(t, w, "schema_version"))
	assert.Equal(t, int64(1), num(t, w, "sequence"))
	assert.Equal(t, "waiting", w["event"])
	assert.Equal(t, "election", w["kind"])
	assert.Equal(t, "room-1", w["name"])
	assert.Equal(t, "http://127.0.0.1:9", w["server"])
	assert.Equal(t, "agent-a", w["candidate_id"])
	assert.Equal(t, "follower", w["reason_code"])

	for i, c := range []struct {
		seq, term, budget, wallShift, contShift int64
	}{
		{2, 7, 5000, 0, 0},
		{3, 7, 4000, -1000, -2000},
		{4, 7, 3000, 60000, 60000},
	} {
		l := ls[i+1]
		assert.Equal(t, cat(electionBase, authKeys), keysOf(t, l))
		m := decode(t, l)
		assert.Equal(t, c.seq, num(t, m, "sequence"))
		assert.Equal(t, c.term, num(t, m, "term"))
		assert.Equal(t, c.budget, num(t, m, "authority_remaining_ms"))
		u, mc := num(t, m, "authority_observed_unix_ms"), num(t, m, "authority_observed_continuous_ms")
		assert.GreaterOrEqual(t, u, wall0+c.wallShift, l)
		assert.LessOrEqual(t, u, wall1+c.wallShift, l)
		assert.GreaterOrEqual(t, mc, cont0+c.contShift, l)
		assert.LessOrEqual(t, mc, cont1+c.contShift, l)
		obs, err := time.Parse(time.RFC3339Nano, m["observed_at"].(string))
		require.NoError(t, err)
		assert.Equal(t, u, obs.UnixMilli(), "observed_at is the same wall sample")
		assert.True(t, strings.HasSuffix(m["observed_at"].(string), "Z"))
	}
	assert.Equal(t, "leader", decode(t, ls[1])["event"])
}

// Lock events never carry candidate_id and use lock reason codes.
func TestLockShape(t *testing.T) {
	rr := fakehold.Start(t, "", nil, "--kind", "lock", "--name", "repo/x",
		"emit:waiting", "emit:acquired,term=42,budget=2000", "emit:lost", "exit:0")
	ls := lines(t, rr, 3)
	require.Equal(t, 0, rr.ExitCode(t, 5*time.Second))
	base := []string{"schema_version", "sequence", "event", "kind", "name", "server"}
	assert.Equal(t, cat(base, []string{"retry_after_ms", "reason_code", "observed_at"}), keysOf(t, ls[0]))
	assert.Equal(t, "held", decode(t, ls[0])["reason_code"])
	assert.Equal(t, cat(base, authKeys), keysOf(t, ls[1]))
	assert.Equal(t, cat(base, []string{"term", "expires_at", "reason_code", "observed_at"}), keysOf(t, ls[2]))
	lost := decode(t, ls[2])
	assert.Equal(t, int64(42), num(t, lost, "term"))
	assert.Equal(t, "lease_changed", lost["reason_code"])
	assert.Equal(t, decode(t, ls[1])["expires_at"], lost["expires_at"])
}

// raw:, huge:, seq=, string=, drop=, schema=, extra= and per-event overrides.
func TestRawHugeAndOptions(t *testing.T) {
	rr := fakehold.Start(t, "", nil,
		"raw:not json, with: colons", "huge:100000", "raw:",
		"emit:waiting,seq=5", "emit:waiting",
		"emit:renewed,budget=2000,string=term,string=authority_remaining_ms,drop=expires_at,drop=server",
		"emit:leader,schema=2,extra=1,kind=lock,candidate=intruder,reason=x,term=0,drop=observed_at",
		"exit:0")
	ls := lines(t, rr, 7)
	require.Equal(t, 0, rr.ExitCode(t, 5*time.Second))
	_, more := rr.NextLine(t, 5*time.Second)
	assert.False(t, more, "nothing after exit")

	assert.Equal(t, "not json, with: colons", ls[0])
	assert.Equal(t, strings.Repeat("x", 100000), ls[1])
	assert.Equal(t, "", ls[2])
	assert.Equal(t, int64(5), num(t, decode(t, ls[3]), "sequence"))
	assert.Equal(t, int64(6), num(t, decode(t, ls[4]), "sequence"))

	r := decode(t, ls[5])
	assert.Equal(t, int64(7), num(t, r, "sequence"))
	assert.Equal(t, "1", r["term"])
	assert.Equal(t, "2000", r["authority_remaining_ms"])
	assert.Contains(t, ls[5], `"term":"1"`)
	assert.NotContains(t, r, "expires_at")
	assert.NotContains(t, r, "server")
	assert.IsType(t, json.Number(""), r["authority_observed_unix_ms"])

	l := decode(t, ls[6])
	assert.Equal(t, int64(2), num(t, l, "schema_version"))
	assert.Equal(t, "lock", l["kind"])
	assert.Equal(t, "intruder", l["candidate_id"])
	assert.Equal(t, "x", l["reason_code"])
	assert.Equal(t, int64(0), num(t, l, "term"))
	assert.NotContains(t, l, "observed_at")
	assert.True(t, strings.HasSuffix(ls[6], `,"x_extra":{"a":[1,2]}}`), ls[6])
	keys := keysOf(t, ls[6])
	assert.Equal(t, "x_extra", keys[len(keys)-1])
}

// Signal handling: TERM after a leader gives released + 143; TERM before
// authority prints nothing; --on-term uncertain on INT gives
// release_unconfirmed + 130; --on-term exit prints nothing.
func TestSignals(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		sig   unix.Signal
		code  int
		check func(t *testing.T, l map[string]any)
	}{
		{"term after leader", []string{"emit:leader,term=3,budget=5000"}, unix.SIGTERM, 143, func(t *testing.T, l map[string]any) {
			assert.Equal(t, "released", l["event"])
			assert.Equal(t, int64(3), num(t, l, "term"))
			assert.Equal(t, int64(2), num(t, l, "sequence"))
			assert.Equal(t, "signal", l["reason_code"])
			assert.NotContains(t, l, "expires_at")
		}},
		{"term before authority", []string{"emit:waiting"}, unix.SIGTERM, 143, nil},
		{"int uncertain", []string{"--on-term", "uncertain", "emit:leader,term=4,budget=5000"}, unix.SIGINT, 130, func(t *testing.T, l map[string]any) {
			assert.Equal(t, "uncertain", l["event"])
			assert.Equal(t, int64(4), num(t, l, "term"))
			assert.Equal(t, "release_unconfirmed", l["reason_code"])
			assert.NotContains(t, l, "expires_at")
		}},
		{"term exit", []string{"--on-term", "exit", "emit:leader,budget=5000"}, unix.SIGTERM, 143, nil},
		{"int released", []string{"emit:leader,budget=5000"}, unix.SIGINT, 130, func(t *testing.T, l map[string]any) {
			assert.Equal(t, "released", l["event"])
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pf := filepath.Join(t.TempDir(), "pids")
			rr := fakehold.Start(t, pf, nil, append([]string{"--pidfile", pf}, c.args...)...)
			lines(t, rr, 1) // the script's event: the handler is installed by now
			require.NoError(t, rr.Cmd.Process.Signal(c.sig))
			if c.check != nil {
				c.check(t, decode(t, lines(t, rr, 1)[0]))
			}
			_, more := rr.NextLine(t, 5*time.Second)
			assert.False(t, more, "no further output")
			assert.Equal(t, c.code, rr.ExitCode(t, 5*time.Second))
		})
	}
}

// --ignore-signals survives TERM/INT/HUP; its descendant (same group,
// immune too) creates the marker; both are then SIGKILLed by the cleanup
// through the pidfile and proven dead. --on-term none survives TERM/INT.
func TestIgnoreSignalsAndDescendant(t *testing.T) {
	dir := t.TempDir()
	pf, marker := filepath.Join(dir, "pids"), filepath.Join(dir, "marker")
	rr := fakehold.Start(t, pf, nil, "--ignore-signals", "--pidfile", pf,
		"--descendant-marker", marker, "--descendant-after", "1s", "emit:leader,budget=5000")
	lines(t, rr, 1)
	var entries []proctest.Record
	proctest.WaitFor(t, 5*time.Second, "two pidfile lines", func() bool {
		var err error
		entries, err = proctest.ReadPidfile(pf)
		require.NoError(t, err)
		return len(entries) == 2
	})
	hold := rr.Cmd.Process.Pid
	var desc proctest.Record
	for _, e := range entries {
		if e.Pid != hold {
			desc = e
		}
	}
	require.NotZero(t, desc.Pid)
	hs, ds := mustStatPid(t, hold), mustStatPid(t, desc.Pid)
	assert.Equal(t, hold, ds.PPid)
	assert.Equal(t, hs.Pgid, ds.Pgid, "descendant stays in the hold's group")

	for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		require.NoError(t, rr.Cmd.Process.Signal(sig))
		require.NoError(t, proctest.Signal(desc, sig))
	}
	_, err := os.Stat(marker)
	assert.True(t, os.IsNotExist(err), "marker only after the delay")
	proctest.WaitFor(t, 5*time.Second, "descendant marker", func() bool { _, err := os.Stat(marker); return err == nil })
	time.Sleep(100 * time.Millisecond) // time for wrongly handled signals to end the hold
	assert.False(t, rr.Exited(), "hold must survive TERM/INT/HUP")
	assert.True(t, desc.Alive())
	select {
	case l, ok := <-rr.Lines:
		if ok {
			t.Errorf("unexpected output after signals: %s", l)
		}
	default:
	}

	t.Run("on-term none", func(t *testing.T) {
		rr := fakehold.Start(t, "", nil, "--on-term", "none", "emit:waiting")
		lines(t, rr, 1)
		require.NoError(t, rr.Cmd.Process.Signal(unix.SIGTERM))
		require.NoError(t, rr.Cmd.Process.Signal(unix.SIGINT))
		time.Sleep(200 * time.Millisecond) // time for a wrongly handled signal to end the hold
		assert.False(t, rr.Exited())
	})
}

func mustStatPid(t *testing.T, pid int) platform.Proc {
	t.Helper()
	st, err := proctest.Stat(pid)
	require.NoError(t, err, "no /proc entry for %d", pid)
	return st
}

// waitfile, exit codes, closeout.
func TestWaitfileExitCloseout(t *testing.T) {
	t.Run("waitfile then exit", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "go")
		rr := fakehold.Start(t, "", nil, "waitfile:"+f+",timeout=5s", "emit:waiting", "exit:9")
		time.Sleep(100 * time.Millisecond) // time for a hold that does not wait to emit
		select {
		case l := <-rr.Lines:
			t.Fatalf("emitted before the file existed: %q", l)
		default:
		}
		require.NoError(t, os.WriteFile(f, nil, 0o644))
		assert.Equal(t, "waiting", decode(t, lines(t, rr, 1)[0])["event"])
		assert.Equal(t, 9, rr.ExitCode(t, 5*time.Second))
	})
	t.Run("waitfile timeout", func(t *testing.T) {
		rr := fakehold.Start(t, "", nil, "waitfile:"+filepath.Join(t.TempDir(), "never")+",timeout=50ms", "emit:waiting")
		assert.Equal(t, 3, rr.ExitCode(t, 5*time.Second))
		_, more := rr.NextLine(t, time.Second)
		assert.False(t, more)
	})
	t.Run("closeout keeps running", func(t *testing.T) {
		rr := fakehold.Start(t, "", nil, "emit:waiting", "closeout", "sleep:10ms", "emit:waiting")
		lines(t, rr, 1)
		_, more := rr.NextLine(t, 5*time.Second)
		assert.False(t, more, "stdout closed")
		time.Sleep(100 * time.Millisecond) // time for a hold that wrongly exits on closeout to do so
		assert.False(t, rr.Exited(), "hold keeps running after closeout")
	})
}

// Bad usage is 64 with a single stderr line and nothing on stdout.
func TestBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bogus"}, {"emit"}, {"emit:leader,term=x"}, {"emit:leader,drop=nosuch"},
		{"emit:leader,string=event"}, {"emit:leader,what=1"}, {"emit:leader,extra=2"},
		{"huge:-1"}, {"exit:256"}, {"sleep:soon"}, {"closeout:1"},
		{"--kind", "queue"}, {"--on-term", "maybe"}, {"--descendant-after", "1s"}, {"--nosuch"},
		{"emit:waiting", "--fakehold-internal-descendant"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			rr := fakehold.Start(t, "", nil, args...)
			assert.Equal(t, 64, rr.ExitCode(t, 5*time.Second))
			msg := rr.Stderr.String()
			assert.True(t, strings.HasPrefix(msg, "fakehold: ") && strings.Count(msg, "\n") == 1, "stderr %q", msg)
			_, more := rr.NextLine(t, time.Second)
			assert.False(t, more, "no stdout")
		})
	}
	t.Run("help", func(t *testing.T) {
		rr := fakehold.Start(t, "", nil, "--help")
		assert.Equal(t, 0, rr.ExitCode(t, 5*time.Second))
		var b bytes.Buffer
		for l := range rr.Lines {
			fmt.Fprintln(&b, l)
		}
		assert.Equal(t, usage, b.String())
	})
}
