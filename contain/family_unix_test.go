//go:build unix

package contain

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

func pids(ps []platform.Proc) []int {
	out := make([]int, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Pid)
	}
	slices.Sort(out)
	return out
}

// tree is a shell started as the leader of a new process group, with the
// "NAME PID" lines it prints.
type tree struct {
	cmd  *exec.Cmd
	root platform.Proc
	pid  map[string]int
	recs []proctest.Record
}

// startTree runs script under /bin/sh in a process group of its own and
// reads one "NAME PID" line per name.
func startTree(t *testing.T, script string, names ...string) *tree {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), "SETSID="+setsidCommand())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	tr := &tree{cmd: cmd, pid: map[string]int{}}
	t.Cleanup(func() { tr.stop(t) })
	tr.root, err = platform.NewProcReader().Stat(cmd.Process.Pid)
	require.NoError(t, err)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for range names {
		select {
		case l := <-lines:
			name, num, _ := strings.Cut(l, " ")
			pid, err := strconv.Atoi(num)
			require.NoError(t, err, "line %q", l)
			tr.pid[name] = pid
			st, err := platform.NewProcReader().Stat(pid)
			require.NoError(t, err, "%s %d", name, pid)
			tr.recs = append(tr.recs, proctest.Record{Pid: pid, Start: st.StartTicks, Role: name})
		case <-time.After(10 * time.Second):
			t.Fatalf("the tree did not report %v", names)
		}
	}
	for _, n := range names {
		require.Contains(t, tr.pid, n)
	}
	return tr
}

func (tr *tree) stat(t *testing.T, name string) platform.Proc {
	t.Helper()
	p, err := platform.NewProcReader().Stat(tr.pid[name])
	require.NoError(t, err)
	return p
}

// orphanTree makes, below a root that leads its group:
//   - grouped: an orphan that stays in the root's group,
//   - parent: a child of the root, and below it
//   - daemon: a child that calls setsid, orphaned once parent is killed,
//   - plain: an ordinary child of the root.
//
// Callers append how the root goes on.
const orphanTree = `
( sleep 3001 & echo "grouped $!" )
sh -c '$SETSID sleep 3002 & echo "daemon $!"; wait' &
echo "parent $!"
sleep 3003 &
echo "plain $!"
`
