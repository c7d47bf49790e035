package contain_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runCLI runs the supervisor to completion with args and env, no processes expected.
func runCLI(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bins.sup, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan struct{})
	go func() { _ = cmd.Run(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("supervisor did not exit")
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// A1, A2: bad words and a worker that is not executable are refused with 64 before
// anything starts.
func TestA1A2UsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	worker := filepath.Join(dir, "w")
	require.NoError(t, os.WriteFile(worker, []byte("#!/bin/sh\n"), 0o755))
	notExec := filepath.Join(dir, "n")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no words", nil, "missing <election|lock>"},
		{"too few", []string{"election", "room", "agent"}, "usage:"},
		{"embedded: election ttl out of range", []string{"election", "--ttl", "4", "room", "agent", worker}, "TTL must be between 5 and 300 seconds"},
		{"embedded: lock ttl out of range", []string{"lock", "--ttl", "3601", "--server", "http://127.0.0.1:9", "room", "-", worker}, "TTL must be between 1 and 3600 seconds"},
		{"embedded: bad acquire timeout", []string{"election", "--acquire-timeout", "5x", "room", "agent", worker}, "invalid duration '5x'"},
		{"embedded: bad candidate", []string{"election", "room", "agent@host", worker}, "candidate"},
		{"embedded: lock needs a server", []string{"lock", "room", "-", worker}, "lock commands require --server or OCTOSTORE_URL"},
		{"embedded: cleartext", []string{"election", "--server", "http://example.com", "room", "agent", worker}, "refusing to send a secret capability over cleartext HTTP"},
		{"embedded flags with a hold command", []string{"election", "--ttl", "30", "room", "agent", worker, "--", "/bin/true"}, "--ttl configure the embedded hold"},
		{"missing --", []string{"election", "room", "agent", worker, "x", "/bin/true"}, "usage:"},
		{"empty hold", []string{"election", "room", "agent", worker, "--"}, "usage:"},
		{"unknown kind", []string{"mutex", "room", "agent", worker, "--", "/bin/true"}, "unknown kind"},
		{"election with -", []string{"election", "room", "-", worker, "--", "/bin/true"}, "needs a candidate"},
		{"lock with candidate", []string{"lock", "room", "agent", worker, "--", "/bin/true"}, "takes '-'"},
		{"empty name", []string{"lock", "", "-", worker, "--", "/bin/true"}, "must not be empty"},
		{"worker not executable", []string{"election", "room", "agent", notExec, "--", "/bin/true"}, "worker program is not executable: " + notExec},
		{"worker missing", []string{"election", "room", "agent", dir + "/nope", "--", "/bin/true"}, "worker program is not executable"},
		{"worker is a directory", []string{"election", "room", "agent", dir, "--", "/bin/true"}, "worker program is not executable"},
		{"hold missing", []string{"election", "room", "agent", worker, "--", dir + "/nohold"}, "hold command not found"},
		{"unknown flag", []string{"election", "--frobnicate", "room", "agent", worker, "--", "/bin/true"}, "usage:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, nil, c.args...)
			require.Equal(t, 64, code, errs)
			require.Empty(t, out)
			require.Contains(t, errs, c.want)
		})
	}
}

// A3: --check-dependencies always succeeds for one static binary; extra words are
// a usage error.
func TestA3CheckDependencies(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI(t, nil, "--check-dependencies")
	require.Equal(t, 0, code)
	require.Equal(t, "octostore-supervisor dependencies are available\n", out)
	code, _, errs := runCLI(t, nil, "--check-dependencies", "extra")
	require.Equal(t, 64, code)
	require.Contains(t, errs, "usage:")
}

// A4, A5: environment and flag values outside the contract are refused with 64
// and a message naming the problem.
func TestA4A5ConfigValidation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	worker := filepath.Join(dir, "w")
	require.NoError(t, os.WriteFile(worker, []byte("#!/bin/sh\n"), 0o755))
	base := []string{"election", "room", "agent", worker, "--", "/bin/true"}
	cases := []struct {
		name  string
		env   []string
		flags []string
		want  string
	}{
		{"silence 21", []string{"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS=21"}, nil, "may only shorten the 20-second session-safety cap"},
		{"silence 0", []string{"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS=0"}, nil, "must be positive"},
		{"silence 1.5", []string{"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS=1.5"}, nil, "must be a positive integer"},
		{"silence empty", []string{"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS="}, nil, "must be a positive integer"},
		{"grace 0", []string{"OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=0"}, nil, "TERM grace must be positive"},
		{"grace text", []string{"OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=one"}, nil, "TERM grace must be a positive integer"},
		{"grace negative", []string{"OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=-1"}, nil, "TERM grace must be a positive integer"},
		{"ready yes", []string{"OCTOSTORE_SUPERVISOR_REQUIRE_WORKER_READY=yes"}, nil, "worker readiness requirement must be 0 or 1"},
		{"flag grace 0", nil, []string{"--term-grace", "0s"}, "--term-grace must be positive"},
		{"flag grace junk", nil, []string{"--term-grace", "soon"}, "usage:"},
		{"flag silence 21s", nil, []string{"--max-silence", "21s"}, "may only shorten"},
		{"flag output", nil, []string{"--worker-output", "file"}, "--worker-output must be stderr or inherit"},
		{"flag containment", nil, []string{"--containment", "jail"}, "unknown --containment"},
		{"cgroup parent missing", nil, []string{"--cgroup-parent", "/sys/fs/cgroup/unified/no-such-dir"}, "does not exist"},
		{"cgroup parent not cgroup v2", nil, []string{"--cgroup-parent", "/tmp"}, "is not on a cgroup v2 filesystem"},
		{"cgroup parent relative", nil, []string{"--cgroup-parent", "unified"}, "must be an absolute path"},
		{"cgroup parent with process-group", nil, []string{"--containment", "process-group", "--cgroup-parent", "/sys/fs/cgroup/unified"}, "needs the cgroup backend"},
		{"max processes without pids controller", nil, []string{"--max-processes", "100"}, "needs the pids controller"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{base[0]}, c.flags...)
			args = append(args, base[1:]...)
			code, out, errs := runCLI(t, c.env, args...)
			require.Equal(t, 64, code, errs)
			require.Empty(t, out)
			require.Contains(t, errs, c.want)
		})
	}
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI(t, nil, "--version")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "octostore-supervisor "), out)
	code, out, _ = runCLI(t, nil, "election", "--help")
	require.Equal(t, 0, code)
	for _, want := range []string{"--term-grace", "--max-silence", "--require-worker-ready", "--worker-output", "<election-id> <candidate-id> <worker-program> [-- <hold command ...>]"} {
		require.Contains(t, out, want)
	}
	code, out, _ = runCLI(t, nil, "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Exit codes")
}
