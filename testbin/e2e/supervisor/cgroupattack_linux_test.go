package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/contain"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// A worker of the same user as its supervisor, where that user owns the
// cgroups of every run (systemd's Delegate=yes chowns the delegated cgroup
// to the user, and everything made below it is the user's), attacks them
// through the cgroup file system. Each attack runs behind the default fence,
// with --private-pids, and once with --no-worker-scope, where it must work,
// so the test can fail. Beside the attacker a victim run of the same user
// beats a heartbeat; behind the fence it beats on, and both runs end with
// their terminal lines.
func TestWorkerCannotTouchCgroups(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, a := range cgroupAttacks() {
		for _, mode := range []struct {
			name  string
			flags []string
		}{{"fenced", nil}, {"private-pids", []string{"--private-pids"}}, {"unfenced", []string{"--no-worker-scope"}}} {
			t.Run(a.name+"/"+mode.name, func(t *testing.T) {
				s := newCgroupScene(t)
				dir := t.TempDir()
				script := "exec >\"$0/result\" 2>/dev/null\n" + a.script(s) + "exit 0\n"
				att := startCLIIn(t, s.cg, dir, nobody, append(append([]string{"run", "--json"}, mode.flags...),
					"--", "/bin/sh", "-c", script, dir)...)
				s.attacker = att
				if mode.name == "unfenced" {
					a.broke(t, s)
					if !exited(att) {
						require.NoError(t, att.cmd.Process.Signal(syscall.SIGTERM))
					}
				} else {
					proctest.WaitFor(t, bound, "the attacker's run to end", func() bool { return exited(att) })
					require.Equal(t, 0, att.wait(bound), att.stderr())
					require.Empty(t, s.result(), "behind the fence every step of the attack was refused")
					require.Contains(t, att.out.String(), `"event":"run"`)
					s.victimBeats(t)
				}
				s.stopVictim(t, mode.name == "unfenced")
			})
		}
	}
}

// cgroupAttack is one attack: the worker's script, and what the test sees
// when it works (unfenced).
type cgroupAttack struct {
	name   string
	script func(s *cgroupScene) string
	broke  func(t *testing.T, s *cgroupScene)
}

func cgroupAttacks() []cgroupAttack {
	return []cgroupAttack{{
		// Leave the run, then kill every supervisor, guardian and shim of
		// the user: they all share supervisor/.
		name: "escape-and-kill",
		script: func(s *cgroupScene) string {
			return fmt.Sprintf("mkdir %[1]s/evil && echo MKDIR\necho $$ > %[1]s/evil/cgroup.procs && echo ESCAPED\necho 1 > %[1]s/supervisor/cgroup.kill && echo KILLED\n", s.cg)
		},
		broke: func(t *testing.T, s *cgroupScene) {
			s.waitResult(t, "MKDIR\nESCAPED\nKILLED\n")
			// Its worker keeps the output pipe open: the harness sees the
			// supervisor end only once that is gone, so ask the kernel.
			proctest.WaitFor(t, bound, "the victim's supervisor to die", func() bool {
				p, err := proctest.Stat(s.victim.cmd.Process.Pid)
				return err != nil || p.Dead()
			})
			s.victimBeats(t) // its worker lives on, unsupervised
			s.killAll(t)
			s.victim.wait(bound)
			require.NotContains(t, s.victim.out.String(), `"event":"run"`, "killed with no terminal line")
		},
	}, {
		// Freeze every supervisor of the user.
		name: "freeze",
		script: func(s *cgroupScene) string {
			return fmt.Sprintf("echo 1 > %s/supervisor/cgroup.freeze && echo FROZE\n", s.cg)
		},
		broke: func(t *testing.T, s *cgroupScene) {
			leaf := filepath.Join(s.cg, contain.SupervisorLeaf)
			defer func() { require.NoError(t, os.WriteFile(filepath.Join(leaf, "cgroup.freeze"), []byte("0"), 0)) }()
			s.waitResult(t, "FROZE\n")
			proctest.WaitFor(t, bound, "every supervisor of the user to be frozen", func() bool {
				events, err := os.ReadFile(filepath.Join(leaf, "cgroup.events"))
				return err == nil && strings.Contains(string(events), "frozen 1")
			})
		},
	}, {
		// Lift the limits of its own leaf (here, where the hierarchy
		// offers no controller, the one limit every cgroup has).
		name: "lift-limits",
		script: func(*cgroupScene) string {
			return "leaf=$(grep ^0:: /proc/self/cgroup | cut -d: -f3-)\nmount=$(awk '$9 == \"cgroup2\" {print $5; exit}' /proc/self/mountinfo)\n" +
				"echo max > \"$mount$leaf/cgroup.max.descendants\" && echo LIFTED\n"
		},
		broke: func(t *testing.T, s *cgroupScene) { s.waitResult(t, "LIFTED\n") },
	}, {
		// Stage an abandoned run around the victim's worker, for the next
		// start's sweep to kill. The sweep's mark (markRun) keeps it from
		// doing so even where the staging works.
		name: "forge-run",
		script: func(s *cgroupScene) string {
			forged := filepath.Join(s.cg, "run-999999.1-999998.1", "worker")
			// Some pids are the worker's short-lived children, gone before
			// they are moved; the shell's own move is what counts.
			return fmt.Sprintf("mkdir -p %[1]s && echo MKDIR\nfor p in $(cat %[2]s/cgroup.procs); do echo $p > %[1]s/cgroup.procs; done\ngrep -q . %[1]s/cgroup.procs && echo MOVED\n", forged, s.victimLeaf)
		},
		broke: func(t *testing.T, s *cgroupScene) {
			s.waitResult(t, "MKDIR\nMOVED\n")
			next := startCLIIn(t, s.cg, t.TempDir(), nobody, "run", "--", "true")
			require.Equal(t, 0, next.wait(bound), next.stderr())
			require.Contains(t, next.stderr(), "is named like a run but not marked by a supervisor: left alone")
			s.victimBeats(t)
		},
	}, {
		// Start a process born in the shared supervisor/ cgroup, outside
		// the run: no cgroup file is written for it.
		name: "clone-into-cgroup",
		script: func(s *cgroupScene) string {
			// Once it worked the worker stays, or its run's teardown would
			// end the sleep (its descendant) before the test looks.
			return fmt.Sprintf("%s %s/supervisor /bin/sleep 600 | grep -q ^cloned && { echo CLONED; sleep 600; }\n", bins.cloneinto, s.cg)
		},
		broke: func(t *testing.T, s *cgroupScene) {
			s.waitResult(t, "CLONED\n")
			procs, err := os.ReadFile(filepath.Join(s.cg, contain.SupervisorLeaf, "cgroup.procs"))
			require.NoError(t, err)
			n := 0
			for _, p := range strings.Fields(string(procs)) {
				if cmd, _ := os.ReadFile("/proc/" + p + "/comm"); strings.TrimSpace(string(cmd)) == "sleep" {
					n++
				}
			}
			require.Equal(t, 1, n, "the attacker's sleep sits in supervisor/, outside its run")
		},
	}}
}

// cgroupScene is a cgroup delegated to nobody as systemd delegates one, and a
// victim run of nobody's in it whose worker beats a heartbeat.
type cgroupScene struct {
	cg         string
	victim     *run
	victimLeaf string
	attacker   *run
}

func newCgroupScene(t *testing.T) *cgroupScene {
	t.Helper()
	cg := newCgroupParent(t)
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		require.NoError(t, os.Chown(filepath.Join(cg, f), nobody, nobody))
	}
	s := &cgroupScene{cg: cg}
	dir := t.TempDir()
	s.victim = startCLIIn(t, cg, dir, nobody, "run", "--json", "--", "/bin/sh", "-c",
		`while :; do date +%s%N > "$0/hb.new" && mv "$0/hb.new" "$0/hb"; sleep 0.02; done`, dir)
	proctest.WaitFor(t, bound, "the victim's first heartbeat", func() bool { _, err := os.Stat(filepath.Join(dir, "hb")); return err == nil })
	runs := runDirsOf(t, cg, s.victim.cmd.Process.Pid)
	require.Len(t, runs, 1)
	s.victimLeaf = filepath.Join(cg, runs[0], "worker")
	return s
}

// killAll kills every process of the scene's cgroup, for an attack that left
// the victim's worker running unsupervised.
func (s *cgroupScene) killAll(t *testing.T) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(s.cg, "cgroup.kill"), []byte("1"), 0))
	empty, err := platform.WaitCgroupEmpty(s.cg, bound)
	require.NoError(t, err)
	require.True(t, empty)
}

// victimBeats waits for the victim's worker to beat again.
func (s *cgroupScene) victimBeats(t *testing.T) {
	t.Helper()
	hb := filepath.Join(s.victim.dir, "hb")
	before, _ := os.ReadFile(hb)
	proctest.WaitFor(t, bound, "the victim's next heartbeat", func() bool {
		now, _ := os.ReadFile(hb)
		return len(now) > 0 && string(now) != string(before)
	})
}

// result is what the attacker's worker wrote: one word per step that worked.
func (s *cgroupScene) result() string {
	b, _ := os.ReadFile(filepath.Join(s.attacker.dir, "result"))
	return string(b)
}

func (s *cgroupScene) waitResult(t *testing.T, want string) {
	t.Helper()
	if !proctest.Until(bound, func() bool { return s.result() == want }) {
		t.Fatalf("unfenced, the attack should work: got %q, want %q; attacker's stderr:\n%s", s.result(), want, s.attacker.stderr())
	}
}

// stopVictim ends the victim run: a live one with SIGTERM, which it must
// answer with its terminal line (143), a killed one (broken) only waited for.
// The cgroup's cleanup (newCgroupParent) kills whatever an attack left.
func (s *cgroupScene) stopVictim(t *testing.T, broken bool) {
	t.Helper()
	if !broken || !exited(s.victim) {
		require.NoError(t, s.victim.cmd.Process.Signal(syscall.SIGTERM))
	}
	code := s.victim.wait(bound)
	if !broken {
		require.Equal(t, 143, code, s.victim.stderr())
		require.Contains(t, s.victim.out.String(), `"event":"run"`)
	}
	s.attacker.wait(bound)
}
