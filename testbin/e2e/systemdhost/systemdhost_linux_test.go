package systemdhost

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/octostore-supervisor/supervisor/internal/testkit/systemdvm"
	"github.com/stretchr/testify/require"
)

// vm is one release's boot: the scenario set run.sh runs there and the bound
// on qemu's whole life (boot, scenarios, power-off).
type vm struct {
	rel   systemdvm.Release
	set   string
	limit time.Duration
}

// vms are the boots of one test: Debian 12 runs the start-up modes, limits
// and attacks (10.5 minutes measured on two idle cores, half of them the
// attacks on the cgroups of a user's supervisors, run.sh's ATTACKS; about 16
// with the cores shared with another test run); Debian 13 runs the container
// engine's scenarios (containers.sh). Boot takes 20-35 s under TCG.
func vms() []vm {
	return []vm{
		{systemdvm.Bookworm(), "systemd", 22 * time.Minute},
		{systemdvm.Trixie(), "containers", 8 * time.Minute},
	}
}

// scenarioTimeout bounds each scenario inside the VM (run.sh kills it and
// fails it past this).
const scenarioTimeout = 60 * time.Second

// stopAt is the VM's uptime after which run.sh starts no scenario (the rest
// are reported as not run): the last one's timeout and the power-off still
// fit in the boot's limit.
func stopAt(limit time.Duration) time.Duration { return limit - scenarioTimeout - 40*time.Second }

// TestSystemdHost boots each release's VM once, one after the other, and
// runs its scenario set in it; each scenario's verdict is a subtest of its
// own (RELEASE/MODE/KIND, e.g. bookworm/svc/run-daemon, trixie/root/pid1).
//
// OCTOSTORE_SYSTEMD_VM_ONLY=REGEX runs only the scenarios whose name
// matches (bash =~); -run 'TestSystemdHost/trixie' boots one release only;
// OCTOSTORE_SYSTEMD_VM_KEEP=DIR keeps each boot's payload disk, console log
// and results in DIR/RELEASE.
func TestSystemdHost(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(),
		"TestSystemdHost boots VMs whose images it builds and caches in %s: run it as root (CI does)", systemdvm.CacheRoot())
	require.NoError(t, systemdvm.CheckTools())
	if dl, ok := t.Deadline(); ok {
		need := 6 * time.Minute // the image builds and make build, at worst
		for _, v := range vms() {
			need += v.limit
		}
		require.Greater(t, time.Until(dl), need, "the test binary's -timeout leaves too little time for the VMs; give it at least %s", need)
	}
	for _, v := range vms() {
		t.Run(v.rel.Suite, func(t *testing.T) { bootAndReport(t, v) })
	}
}

// bootAndReport builds or reuses v's image, boots it with the payload and
// reports its scenarios.
func bootAndReport(t *testing.T, v vm) {
	ctx := context.Background()
	start := time.Now()
	img, err := systemdvm.EnsureImage(ctx, v.rel, t.Logf)
	require.NoError(t, err)
	if img.Built {
		t.Logf("VM image built in %s: %s", img.Took.Round(time.Second), img.Dir)
	} else {
		t.Logf("VM image reused: %s", img.Dir)
	}

	payload := t.TempDir()
	buildBinaries(t, filepath.Join(payload, "bin"))
	writePayload(t, payload, v)

	work := os.Getenv("OCTOSTORE_SYSTEMD_VM_KEEP")
	if work == "" {
		work = t.TempDir()
	} else {
		work = filepath.Join(work, v.rel.Suite)
		require.NoError(t, os.MkdirAll(work, 0o755))
	}
	boot, err := img.Run(ctx, payload, work, v.limit)
	if boot != nil {
		if boot.Retried != "" {
			t.Logf("VM: the first boot's kernel panicked before the payload ran (qemu's TCG; its console: %s); booted again", boot.Retried)
		}
		t.Logf("VM: qemu ran %s (this boot so far %s); console log %s", boot.Took.Round(time.Second),
			time.Since(start).Round(time.Second), boot.Console)
	}
	if boot != nil && boot.Results != "" {
		// A VM killed at its limit still reports the scenarios it finished.
		reportScenarios(t, boot)
	}
	require.NoError(t, err)
}

func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test's directory")
		dir = parent
	}
}

// buildBinaries builds bin/octostore-supervisor and bin/octostore exactly as
// users get them: make build (the supervisor with its appended images).
func buildBinaries(t testing.TB, bin string) {
	t.Helper()
	start := time.Now()
	out, err := exec.Command("make", "-C", repoRoot(t), "build", "BIN="+bin).CombinedOutput()
	require.NoError(t, err, "make build BIN=%s:\n%s", bin, out)
	for _, name := range []string{"octostore-supervisor", "octostore"} {
		_, err := os.Stat(filepath.Join(bin, name))
		require.NoError(t, err, "make build made no %s", name)
	}
	t.Logf("make build took %s", time.Since(start).Round(time.Second))
}

// writePayload lays out what run.sh expects: guest/ (the scenarios),
// systemd/ (the unit example), config (v's set and times), and run.sh at the
// top.
func writePayload(t *testing.T, payload string, v vm) {
	t.Helper()
	root := repoRoot(t)
	copyDir(t, filepath.Join(root, "testbin/e2e/systemdhost/guest"), filepath.Join(payload, "guest"))
	copyDir(t, filepath.Join(root, "docs/systemd"), filepath.Join(payload, "systemd"))
	config := fmt.Sprintf("SET=%s\nSTOP_AT=%d\nSCENARIO_TIMEOUT=%d\n", v.set, int(stopAt(v.limit).Seconds()), int(scenarioTimeout.Seconds()))
	if only := os.Getenv("OCTOSTORE_SYSTEMD_VM_ONLY"); only != "" {
		config += "ONLY='" + strings.ReplaceAll(only, "'", `'\''`) + "'\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(payload, "config"), []byte(config), 0o644))
	run := "#!/bin/bash\nexec \"$1/guest/run.sh\" \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(payload, "run.sh"), []byte(run), 0o755))
}

// copyDir copies a flat directory; scripts keep working whatever the
// checkout did to their modes (.sh and .py are made executable).
func copyDir(t testing.TB, from, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(to, 0o755))
	entries, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(e.Name(), ".sh") || strings.HasSuffix(e.Name(), ".py") {
			mode = 0o755
		}
		in, err := os.Open(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		out, err := os.OpenFile(filepath.Join(to, e.Name()), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		require.NoError(t, err)
		_, err = io.Copy(out, in)
		require.NoError(t, err)
		in.Close()
		require.NoError(t, out.Close())
	}
}

type verdict struct {
	pass   bool
	reason string
}

// reportScenarios turns results.txt into one subtest per planned scenario.
func reportScenarios(t *testing.T, boot *systemdvm.Boot) {
	runOut := systemdvm.Tail(filepath.Join(boot.Results, "run.out"), 30)
	f, err := os.Open(filepath.Join(boot.Results, "results.txt"))
	require.NoError(t, err, "the VM wrote no results.txt; run.out:\n%s\nconsole:\n%s", runOut, boot.ConsoleTail(40))
	defer f.Close()
	var plan []string
	got := map[string]verdict{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "PLAN "):
			plan = append(plan, strings.TrimPrefix(line, "PLAN "))
		case strings.HasPrefix(line, "PASS "):
			got[strings.TrimPrefix(line, "PASS ")] = verdict{pass: true}
		case strings.HasPrefix(line, "FAIL "):
			name, reason, _ := strings.Cut(strings.TrimPrefix(line, "FAIL "), ": ")
			got[name] = verdict{reason: reason}
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, plan, "results.txt plans no scenario; run.out:\n%s", runOut)
	var summary strings.Builder
	for _, name := range plan {
		v, ok := got[name]
		status := "no result"
		if ok && v.pass {
			status = "PASS"
		} else if ok {
			status = "FAIL: " + v.reason
		}
		fmt.Fprintf(&summary, "  %-48s %s\n", name, status)
		t.Run(name, func(t *testing.T) {
			require.True(t, ok, "no result: the VM's run ended before this scenario; run.out:\n%s\nconsole:\n%s\nwatchdog (processes when the VM was about to be killed):\n%s",
				runOut, boot.ConsoleTail(30), systemdvm.Tail(filepath.Join(boot.Results, "watchdog.txt"), 80))
			if !v.pass {
				log := systemdvm.Tail(filepath.Join(boot.Results, "logs", strings.ReplaceAll(name, "/", "--")+".log"), 200)
				t.Fatalf("%s\n---- the scenario's log (inside the VM) ----\n%s", v.reason, log)
			}
		})
	}
	t.Logf("scenarios:\n%s", summary.String())
}
