package platform

import (
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAllReadsTheWholeTable(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := NewProcReader()
	all, err := r.All(nil)
	require.NoError(t, err)
	i := slices.IndexFunc(all, func(p Proc) bool { return p.Pid == cmd.Process.Pid })
	require.GreaterOrEqual(t, i, 0, "our child is missing")
	require.Equal(t, os.Getpid(), all[i].PPid)
	self, err := r.Stat(os.Getpid())
	require.NoError(t, err)
	require.Contains(t, all, self, "a process read by All must match its Stat")
	// It appends.
	more, err := r.All(all[:1])
	require.NoError(t, err)
	require.Equal(t, all[0], more[0])
}

func TestDescendantsIn(t *testing.T) {
	all := []Proc{
		{Pid: 1, PPid: 0}, {Pid: 10, PPid: 1}, {Pid: 11, PPid: 10}, {Pid: 12, PPid: 11},
		{Pid: 13, PPid: 10}, {Pid: 14, PPid: 13}, {Pid: 20, PPid: 1},
	}
	require.Equal(t, []int{11, 12, 13, 14}, pidsOf(DescendantsIn(all, 10, nil)))
	require.Equal(t, []int{11, 12}, pidsOf(DescendantsIn(all, 10, nil, 13)))
	require.Empty(t, DescendantsIn(all, 20, nil))
	prefix := []Proc{{Pid: 99}}
	require.Equal(t, []int{12, 99}, pidsOf(DescendantsIn(all, 11, prefix)))
	// A table with a cycle (a pid read mid-recycle) cannot loop forever.
	require.Equal(t, []int{31}, pidsOf(DescendantsIn([]Proc{{Pid: 30, PPid: 31}, {Pid: 31, PPid: 30}}, 30, nil)))
}

// pidsOf is the sorted pids of ps.
func pidsOf(ps []Proc) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.Pid)
	}
	slices.Sort(out)
	return out
}
