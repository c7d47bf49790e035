package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/platform"
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
	defaultPassOnly(t)
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
		{"worker missing", []string{"election", "room", "agent", dir + "/nope", "--", "/bin/true"}, "worker program not found: " + dir + "/nope"},
		{"worker is a directory", []string{"election", "room", "agent", dir, "--", "/bin/true"}, "worker program is a directory, not a program: " + dir},
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

// A worker the kernel would refuse at execve is refused with 64 before anything
// starts, and the message says what is wrong: not found (in PATH, for a bare
// name), a directory, no execute bit, no #! line and no native image, a #!
// interpreter that is missing or a directory.
func TestWorkerProgramChecks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), mode))
		return p
	}
	noShebang := write("plain", "echo hi\n", 0o755)
	missingInterp := write("missing-interp", "#!"+dir+"/no-such-shell -e\n", 0o755)
	dirInterp := write("dir-interp", "#! "+dir+"\n", 0o755)
	emptyInterp := write("empty-interp", "#!\n", 0o755)
	write("relative", "#!/bin/sh\n", 0o755)
	cwd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(cwd, dir)
	require.NoError(t, err)
	for _, c := range []struct {
		name, worker string
		env          []string
		want         string
	}{
		{"no #! line", noShebang, nil, "worker program is not executable: " + noShebang + ": not an ELF binary, and no #! line names an interpreter"},
		{"interpreter missing", missingInterp, nil, "its #! interpreter " + dir + "/no-such-shell does not exist"},
		{"interpreter is a directory", dirInterp, nil, "its #! interpreter " + dir + " is a directory"},
		{"no interpreter", emptyInterp, nil, "its #! line names no interpreter"},
		{"bare name not in PATH", "no-such-worker", []string{"PATH=" + dir}, "worker program not found in PATH: no-such-worker"},
		{"bare name only through a relative PATH entry", "relative", []string{"PATH=" + rel}, "give its path (./relative)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireRefused(t, c.env, c.want, "election", "room", "agent", c.worker, "--", "/bin/true")
		})
	}
}

// A bare worker name is looked up in PATH as a shell would (issue 11: `... R
// agent-a nginx` was refused as "not executable"), and the first diagnostic
// names the file that runs.
func TestWorkerFoundInPATH(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	worker := filepath.Join(bin, "agent-worker")
	script := fmt.Sprintf("#!/bin/sh\nexec '%s' --pidfile '%s/pids' --log '%s/log' --term-exits\n", bins.esc, dir, dir)
	require.NoError(t, os.WriteFile(worker, []byte(script), 0o755))
	args := []string{"election"}
	if testContainment != "" {
		args = append(args, "--containment", testContainment)
	}
	args = append(args, "room", "agent", "agent-worker", "--", bins.hold, "--pidfile", dir+"/hold.pids",
		"emit:leader,term=1,budget=60000", "waitfile:"+dir+"/log", "exit:0")
	cmd := exec.Command(bins.sup, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "PATH="+bin+":/usr/bin:/bin")
	r := launch(t, &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1,
		gsess: make(chan platform.Proc, 1)})
	code := r.wait(bound)
	require.NotEqual(t, 64, code, r.stderr())
	first, _, _ := strings.Cut(r.stderr(), "\n")
	require.Equal(t, "octostore-supervisor: worker program agent-worker is "+worker+" (found in PATH)", first)
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	require.NoError(t, err, "the worker never ran")
	require.Contains(t, string(log), "started")
}

// requireRefused runs the supervisor with args and requires a usage error (64)
// whose stderr contains want, with nothing on stdout and nothing started.
func requireRefused(t *testing.T, env []string, want string, args ...string) {
	t.Helper()
	code, out, errs := runCLI(t, env, args...)
	require.Equal(t, 64, code, errs)
	require.Empty(t, out)
	require.Contains(t, errs, want)
	require.NotContains(t, errs, "containment:", "nothing may start")
}

// A3: --check-dependencies always succeeds for one static binary; extra words are
// a usage error.
func TestA3CheckDependencies(t *testing.T) {
	defaultPassOnly(t)
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
	defaultPassOnly(t)
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
	defaultPassOnly(t)
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

// An explicit --cgroup-parent must be delegated to us - ours by ownership and
// writable by mode - even as root, for whom access(2) allows every write: a
// subtree chowned to another user is that user's, and is refused with 64
// (issue 10). The same parent, ours, runs the command.
func TestCgroupParentMustBeDelegated(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, c := range []struct {
		name  string
		owner int
		code  int
		want  string
	}{
		{"ours", 0, 0, ""},
		{"another user's", nobody, 64, "is owned by uid 65534, not by us (uid 0): not delegated to us"},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := newCgroupParent(t)
			for _, p := range []string{parent, parent + "/cgroup.procs", parent + "/cgroup.subtree_control"} {
				require.NoError(t, os.Chown(p, c.owner, c.owner))
			}
			code, _, errs := runCLI(t, nil, "run", "--containment", "cgroup", "--cgroup-parent", parent, "--", "/bin/true")
			require.Equal(t, c.code, code, errs)
			require.Contains(t, errs, c.want)
		})
	}
}
