package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A resource limit asked for where it cannot be enforced exits 64 before the
// hold starts, naming the controller, the cgroup that lacks it and how to
// get it (issue 33): never a silent no-op. The parent is a cgroup whose
// parent passes no controller on, so this holds on every host, the
// development host (hybrid: memory and cpu belong to cgroup v1) as well as a
// pure cgroup v2 one.
func TestLimitRefusedWhereNotEnforceable(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	bare := filepath.Join(newCgroupParent(t), "bare")
	require.NoError(t, os.Mkdir(bare, 0o755))
	ctrls, err := os.ReadFile(filepath.Join(bare, "cgroup.controllers"))
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(ctrls)), "a cgroup below one that enables nothing is offered nothing")
	dir := t.TempDir()
	worker := filepath.Join(dir, "worker")
	require.NoError(t, os.WriteFile(worker, []byte("#!/bin/sh\nsleep 10\n"), 0o755))
	hold := func(pidfile string) []string {
		return []string{"--", bins.hold, "--pidfile", pidfile, "emit:leader,term=1,budget=60000", "forever"}
	}
	refusal := func(flag, ctrl string) string {
		return flag + " needs the " + ctrl + " controller, which " + bare + " does not offer: "
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"run memory", []string{"run", "--cgroup-parent", bare, "--memory-max", "64M", "--", "/bin/true"}, refusal("--memory-max", "memory")},
		{"run cpu", []string{"run", "--cgroup-parent", bare, "--cpu-max", "0.5", "--", "/bin/true"}, refusal("--cpu-max", "cpu")},
		{"election memory", append([]string{"election", "--cgroup-parent", bare, "--memory-max", "1G", "room", "agent", worker}, hold(filepath.Join(dir, "e.pids"))...), refusal("--memory-max", "memory")},
		{"lock cpu", append([]string{"lock", "--cgroup-parent", bare, "--cpu-max", "2", "room", "-", worker}, hold(filepath.Join(dir, "l.pids"))...), refusal("--cpu-max", "cpu")},
		{"process-group", []string{"run", "--containment", "process-group", "--memory-max", "64M", "--cpu-max", "1", "--", "/bin/true"}, "--memory-max and --cpu-max: resource limits need the cgroup backend"},
		{"memory not a size", []string{"run", "--memory-max", "64Q", "--", "/bin/true"}, `--memory-max "64Q" is not a size`},
		{"memory without a unit", []string{"run", "--memory-max", "64", "--", "/bin/true"}, "is below 1M, the least a worker tree can run in (a bare number is bytes"},
		{"cpu too small", []string{"run", "--cpu-max", "0.001", "--", "/bin/true"}, "below 0.01 CPU"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, nil, c.args...)
			require.Equal(t, 64, code, errs)
			require.Empty(t, out)
			require.Contains(t, errs, c.want)
		})
	}
	for _, f := range []string{"e.pids", "l.pids"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.True(t, os.IsNotExist(err), "the hold ran (%s)", f)
	}
}
