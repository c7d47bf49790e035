package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/contain"
)

// configOf parses a supervise command line as the app does and returns what
// configFrom makes of it, closing the host guard's files it opened.
func configOf(t *testing.T, kind string, env []string, args ...string) (contain.Config, error) {
	t.Helper()
	var cfg contain.Config
	var err error
	app := &cli.App{
		Writer: io.Discard, ErrWriter: io.Discard,
		Commands: []*cli.Command{{
			Name: kind, Flags: superviseFlags(),
			Action: func(c *cli.Context) error {
				cfg, err = configFrom(c, kind, env)
				return nil
			},
		}},
	}
	require.NoError(t, app.Run(literalPositionals(append([]string{"octostore-supervisor", kind}, args...))))
	if cfg.Survivors != nil {
		require.NoError(t, cfg.Survivors.Close())
	}
	if cfg.Interlock != nil {
		require.NoError(t, cfg.Interlock.Close())
	}
	return cfg, err
}

// The environment sets the grace, the silence cap and the readiness
// requirement; a flag that is given overrides it; a bad value is refused
// with its own message, the environment's checks before the flags' and both
// before the programs' (issue 34 split configFrom by source; this pins what
// it did whole).
func TestConfigFromSourcesAndPrecedence(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	state := []string{"XDG_RUNTIME_DIR=" + t.TempDir()}
	env := func(kv ...string) []string { return append(kv, state...) }
	explicit := func(flags ...string) []string { return append(flags, "R", "a", self, "--", self, "x") }

	t.Run("defaults", func(t *testing.T) {
		cfg, err := configOf(t, "election", env(), explicit()...)
		require.NoError(t, err)
		require.Equal(t, contain.DefaultGrace, cfg.Grace)
		require.Equal(t, contain.DefaultSilenceCap, cfg.SilenceCap)
		require.False(t, cfg.RequireReady)
		require.Equal(t, contain.WorkerOutputStderr, cfg.WorkerOutput)
		require.Equal(t, []string{self, "x"}, cfg.Hold)
		require.Equal(t, "a", cfg.Candidate)
		require.Equal(t, self, cfg.Worker)
		require.False(t, cfg.EmbeddedHold)
	})
	t.Run("environment", func(t *testing.T) {
		cfg, err := configOf(t, "election", env("OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=3",
			"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS=5", "OCTOSTORE_SUPERVISOR_REQUIRE_WORKER_READY=1"), explicit()...)
		require.NoError(t, err)
		require.Equal(t, 3*time.Second, cfg.Grace)
		require.Equal(t, 5*time.Second, cfg.SilenceCap)
		require.True(t, cfg.RequireReady)
	})
	t.Run("flags override the environment", func(t *testing.T) {
		cfg, err := configOf(t, "lock", env("OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=3",
			"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS=5", "OCTOSTORE_SUPERVISOR_REQUIRE_WORKER_READY=1"),
			"--term-grace", "2s", "--max-silence", "4s", "--require-worker-ready=false", "--worker-output", "inherit",
			"R", "-", self, "--", self)
		require.NoError(t, err)
		require.Equal(t, 2*time.Second, cfg.Grace)
		require.Equal(t, 4*time.Second, cfg.SilenceCap)
		require.False(t, cfg.RequireReady)
		require.Equal(t, contain.WorkerOutputInherit, cfg.WorkerOutput)
		require.Equal(t, "", cfg.Candidate, "a lock's '-' is no candidate")
	})

	for _, tc := range []struct {
		name string
		kind string
		env  []string
		args []string
		want string
	}{
		{"grace text", "election", env("OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=one"), explicit(), "TERM grace must be a positive integer"},
		{"grace over an hour", "election", env("OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=3601"), explicit(), "TERM grace must be positive (and at most one hour)"},
		{"silence 21", "election", env("OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS=21"), explicit(), "OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS may only shorten the 20-second session-safety cap"},
		{"silence 0", "election", env("OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS=0"), explicit(), "OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS must be positive"},
		{"ready 2", "election", env("OCTOSTORE_SUPERVISOR_REQUIRE_WORKER_READY=2"), explicit(), "worker readiness requirement must be 0 or 1"},
		{"a flag does not excuse a bad variable", "election", env("OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=0"), explicit("--term-grace", "2s"), "TERM grace must be positive (and at most one hour)"},
		{"flag grace 0", "election", env("OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=3"), explicit("--term-grace", "0s"), "--term-grace must be positive and at most 1h"},
		{"flag silence 21s", "election", env(), explicit("--max-silence", "21s"), "--max-silence must be positive and may only shorten the 20-second session-safety cap"},
		{"release timeout 0", "election", env(), explicit("--release-timeout", "0s"), "--ready-timeout and --release-timeout must be positive"},
		{"worker output", "election", env(), explicit("--worker-output", "file"), `--worker-output must be stderr or inherit, not "file"`},
		{"flags before the worker", "election", env(), []string{"--worker-output", "file", "R", "a", "/nonexistent/w", "--", self}, `--worker-output must be stderr or inherit, not "file"`},
		{"worker before the hold", "election", env(), []string{"R", "a", "/nonexistent/w", "--", "/nonexistent/h"}, "worker program not found: /nonexistent/w"},
		{"hold command", "election", env(), []string{"R", "a", self, "--", "/nonexistent/h"}, "hold command not found: /nonexistent/h"},
		{"embedded flag with a hold command", "election", env(), explicit("--server", "local"), `--server configure the embedded hold; with "-- <hold command>" give them to that command instead`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := configOf(t, tc.kind, tc.env, tc.args...)
			require.EqualError(t, err, tc.want)
		})
	}

	// The positional checks come first (a bad variable waits) and append the
	// command's usage.
	for _, tc := range []struct {
		name, kind string
		args       []string
		want       string
	}{
		{"empty name", "election", []string{"", "a", self, "--", self}, "the expected election name must not be empty"},
		{"election without a candidate", "election", []string{"R", "-", self}, "an election needs a candidate id (not '-')"},
		{"lock with a candidate", "lock", []string{"R", "a", self}, "a lock takes '-' in place of the candidate id"},
		{"no worker", "lock", []string{"R", "-"}, "expected <expected-name> <expected-candidate|-> <worker-program> [-- <hold command ...>]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := configOf(t, tc.kind, env("OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=x"), tc.args...)
			var ue usageError
			require.ErrorAs(t, err, &ue)
			head, _, ok := strings.Cut(ue.msg, "\n")
			require.True(t, ok, "no usage after the message: %q", ue.msg)
			require.Equal(t, tc.want, head)
		})
	}
}
