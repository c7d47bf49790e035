package supervisor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/contain"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// The issue 14 tables: teardown to the supervisor's exit beside the physical
// floor, and N concurrent supervised elections on the host-local authority.

// floorBin is testbin/floor, built on first use (the suite's TestMain builds
// what the tests need; only the bench needs this).
var floorBin = sync.OnceValues(func() (string, error) {
	path := filepath.Join(bins.dir, "floor")
	out, err := proctest.GoBuild("-o", path, filepath.Join(moduleRoot, "testbin", "floor")).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build testbin/floor: %w\n%s", err, out)
	}
	return path, nil
})

// teardownRuns is how many teardowns each column of the teardown table
// measures: enough for a p99 that is not simply the maximum.
const teardownRuns = 40

// benchTeardownTable: the hold writes lost -> the supervisor has exited, for
// a TERM-obedient worker, both backends, beside a program that only does
// kill(-pgid); waitpid for the same worker and hold.
func benchTeardownTable(b *testing.B) {
	floor, err := floorBin()
	if err != nil {
		b.Fatal(err)
	}
	r := row{"TERM-obedient worker (sh exec escaper --term-exits)"}
	for _, backend := range []string{"process-group", "cgroup"} {
		d := benchExit(b, teardownRuns, "--term-exits", func(dir, w string, hold []string) *exec.Cmd {
			return exec.Command(bins.sup, append([]string{"election", "--term-grace", "1s", "--containment", backend, "room", "agent", w, "--"}, hold...)...)
		})
		r = append(r, ms(pct(d, 50)), ms(pct(d, 99)))
	}
	d := benchExit(b, teardownRuns, "--term-exits", func(dir, w string, hold []string) *exec.Cmd {
		return exec.Command(floor, append([]string{w, "--"}, hold...)...)
	})
	r = append(r, ms(pct(d, 50)), ms(pct(d, 99)))
	printTable(fmt.Sprintf("Teardown, %d runs each: the hold writes lost -> the supervisor has exited (targets: p50 <= 15 ms, p99 <= 30 ms); floor: kill(-pgid) of worker and hold, waitpid, exit (testbin/floor):", teardownRuns),
		row{"worker", "process-group p50", "process-group p99", "cgroup p50", "cgroup p99", "floor p50", "floor p99"}, []row{r})
}

// benchExit runs n supervisors (or floors) made by mk and returns, for each,
// the time from the hold's lost stamp to the process's exit as seen by its
// parent.
func benchExit(b *testing.B, n int, flags string, mk func(dir, worker string, hold []string) *exec.Cmd) []time.Duration {
	var out []time.Duration
	for i := 0; i < n; i++ {
		dir := b.TempDir()
		w, hold := benchRun(b, dir, flags)
		cmd := mk(dir, w, hold)
		var stdout strings.Builder
		cmd.Stdout = &stdout
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		err := cmd.Wait()
		exited := time.Now()
		if code := cmd.ProcessState.ExitCode(); err != nil && code != contain.ExitAuthority {
			b.Fatalf("%s: %v\n%s", cmd.Path, err, stdout.String())
		}
		if cmd.Path == bins.sup && !strings.Contains(stdout.String(), `"event":"lost"`) {
			b.Fatalf("no lost line:\n%s", stdout.String())
		}
		out = append(out, exited.Sub(readNanos(b, dir+"/stamps", "lost")))
	}
	return out
}

// benchScaleTable: N concurrent supervised elections on the host-local
// authority (embedded hold, one room each, exec sleep workers).
func benchScaleTable(b *testing.B) {
	const idle = 10 * time.Second
	var rows []row
	for _, n := range []int{1, 10, 50} {
		rows = append(rows, append(benchScale(b, n, idle), ms(benchStopFloor(b, n))))
	}
	printTable(fmt.Sprintf("N concurrent supervised elections on the host-local authority (embedded hold, one room each, `exec sleep` workers, backend auto); processes and PSS count the supervisor-side processes (supervisor, guardian, shims, embedded hold), not the workers; idle CPU over %v; floor: N more such runs, every process of theirs (workers included) SIGKILLed at once, until the last is reaped:", idle),
		row{"N", "start all (to N leader lines)", "processes", "PSS per run (target <= 5 MB at N = 50)", "idle CPU per run per 10 s (target <= 5 ms)", "stop all (SIGTERM; target <= 500 ms at N = 50)", "stop all, floor"}, rows)
}

// localState is a private state directory for the host-local authority, as
// the environment that selects it, and an `exec sleep` worker beside it.
func localState(b *testing.B) (env []string, worker string) {
	xdg := filepath.Join(b.TempDir(), "state")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		b.Fatal(err)
	}
	worker = filepath.Join(xdg, "..", "sleep.sh")
	if err := os.WriteFile(worker, []byte("#!/bin/sh\nexec sleep 1000\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	return localEnv("XDG_RUNTIME_DIR=" + xdg), worker
}

func benchScale(b *testing.B, n int, idle time.Duration) row {
	cmds, startAll := startScaleRuns(b, n)
	time.Sleep(time.Second) // let start-up settle before sampling idle cost
	var procs []ourProc
	for _, c := range cmds {
		procs = append(procs, ourProcesses(c.Process.Pid)...)
	}
	before := make([]int64, len(procs))
	for i, p := range procs {
		before[i] = cpuAndSwitches(p.pid)[0]
	}
	time.Sleep(idle)
	var cpu, pss float64
	for i, p := range procs {
		cpu += float64(cpuAndSwitches(p.pid)[0]-before[i]) * 10 // clock ticks of 10 ms
		pss += memOf(p.pid).pss
	}

	stopping := time.Now()
	stopScaleRuns(cmds)
	stopped := time.Since(stopping)
	return row{fmt.Sprint(n), ms(startAll), fmt.Sprint(len(procs)), fmt.Sprintf("%.1f MB", pss/float64(n)),
		fmt.Sprintf("%.0f ms", cpu/float64(n)*float64(10*time.Second)/float64(idle)), ms(stopped)}
}

// startScaleRuns starts n supervised elections, one room each, and returns
// once each has printed its leader line.
func startScaleRuns(b *testing.B, n int) ([]*exec.Cmd, time.Duration) {
	env, worker := localState(b)
	rooms := make([]string, n)
	for i := range rooms {
		create := exec.Command(bins.octostore, "election", "create", "--server", "local", "--json")
		create.Env = env
		out, err := create.Output()
		var room struct {
			ElectionID string `json:"election_id"`
		}
		if err == nil {
			err = json.Unmarshal(out, &room)
		}
		if err != nil {
			b.Fatalf("octostore election create: %v\n%s", err, out)
		}
		rooms[i] = room.ElectionID
	}

	cmds := make([]*exec.Cmd, 0, n)
	leaders := make(chan error, n)
	began := time.Now()
	for _, room := range rooms {
		cmd := exec.Command(bins.sup, "election", "--server", "local", room, "agent", worker)
		cmd.Env = env
		stdout, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			stopScaleRuns(cmds)
			b.Fatal(err)
		}
		cmds = append(cmds, cmd)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if strings.Contains(sc.Text(), `"event":"leader"`) {
					leaders <- nil
					_, _ = io.Copy(io.Discard, stdout)
					return
				}
			}
			leaders <- fmt.Errorf("supervisor %d ended without a leader line", cmd.Process.Pid)
		}()
	}
	for range cmds {
		if err := <-leaders; err != nil {
			stopScaleRuns(cmds)
			b.Fatal(err)
		}
	}
	return cmds, time.Since(began)
}

func stopScaleRuns(cmds []*exec.Cmd) {
	for _, c := range cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range cmds {
		_ = c.Wait()
	}
}

// benchStopFloor is stop-all's floor: n more runs, started as benchScale's,
// whose every process (supervisor, guardian, shims, hold, worker) gets SIGKILL
// at once, timed until the last of them is reaped. No protocol, no proof: what
// the kernel needs to end and reap that many processes of that size. The
// supervisors are our children; the rest re-parent to us (TestMain made us a
// subreaper) or are reaped by a parent that outlives them a moment.
func benchStopFloor(b *testing.B, n int) time.Duration {
	cmds, _ := startScaleRuns(b, n)
	time.Sleep(time.Second)
	pr := platform.NewProcReader()
	var all, others []platform.Proc
	for _, c := range cmds {
		p, err := pr.Stat(c.Process.Pid)
		if err != nil {
			stopScaleRuns(cmds)
			b.Fatal(err)
		}
		ds, _ := pr.Descendants(p.Pid, nil)
		all = append(append(all, p), ds...)
		others = append(others, ds...)
	}
	began := time.Now()
	for _, p := range all {
		_ = pr.Signal(p, syscall.SIGKILL)
	}
	for _, c := range cmds {
		_ = c.Wait()
	}
	for len(others) > 0 {
		left := others[:0]
		for _, p := range others {
			var ws unix.WaitStatus
			if got, _ := unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil); got == p.Pid {
				continue // reaped by us
			}
			if now, err := pr.Stat(p.Pid); err != nil || now.StartTicks != p.StartTicks {
				continue // reaped by its own parent
			}
			left = append(left, p)
		}
		others = left
		if len(others) > 0 && time.Since(began) > time.Minute {
			// A generous bound, so a process the kill cannot end fails the
			// bench instead of hanging it.
			b.Fatalf("stop floor: %d processes killed a minute ago are not reaped, the first pid %d", len(others), others[0].Pid)
		}
		if len(others) > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	took := time.Since(began)
	sweepAbandoned(b)
	return took
}

// sweepAbandoned removes the runs whose supervisor and guardian were killed
// (benchStopFloor), as their user would, with `sweep`. Left behind, they are
// swept by the next supervisor to start, the renewals table's, which then
// keeps what that sweep allocated: it read 2.1 MB of anonymous memory
// instead of 1.1 in every whole `make bench` until this.
func sweepAbandoned(b *testing.B) {
	if out, err := exec.Command(bins.sup, "sweep").CombinedOutput(); err != nil {
		b.Fatalf("octostore-supervisor sweep after the stop floor: %v\n%s", err, out)
	}
}

// benchRenewalsTable: the anonymous memory of every supervisor-side process
// of one supervised lock on the host-local authority as its renewals add up
// (--ttl 2: about one a second), so garbage that no collection takes back
// shows as growth. The other tables sample a few seconds into a run.
func benchRenewalsTable(b *testing.B) {
	marks := []time.Duration{10 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute}
	env, worker := localState(b)
	cmd := exec.Command(bins.sup, "lock", "--server", "local", "--ttl", "2", "--term-grace", "100ms", "bench-renewals", "-", worker)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	acquired := make(chan struct{})
	var renewals atomic.Int64
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			switch {
			case strings.Contains(sc.Text(), `"event":"acquired"`):
				close(acquired)
			case strings.Contains(sc.Text(), `"event":"renewed"`):
				renewals.Add(1)
			}
		}
	}()
	select {
	case <-acquired:
	case <-time.After(30 * time.Second):
		b.Fatal("the supervised lock was not acquired within 30 s")
	}
	began := time.Now()
	procs := ourProcesses(cmd.Process.Pid)
	header := row{"process"}
	rows := make([]row, len(procs)+1)
	for i, p := range procs {
		rows[i] = row{p.name}
	}
	rows[len(procs)] = row{"all"}
	for _, m := range marks {
		time.Sleep(time.Until(began.Add(m)))
		var total float64
		for i, p := range procs {
			anon := memOf(p.pid).anon
			total += anon
			rows[i] = append(rows[i], fmt.Sprintf("%.2f", anon))
		}
		rows[len(procs)] = append(rows[len(procs)], fmt.Sprintf("%.2f", total))
		header = append(header, fmt.Sprintf("%v (%d renewals)", m, renewals.Load()))
	}
	printTable("Anonymous memory (MB) of one supervised lock's processes as its renewals add up (host-local authority, embedded hold, --ttl 2):", header, rows)
}
