package contain

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

// RunConfig is one `octostore-supervisor run`: any command, no authority.
type RunConfig struct {
	Argv       []string // absolute path of the program, then its arguments
	Env        []string
	Backend    Backend
	Isolation  Isolation // resolved by ResolveIsolation
	NoNewPrivs bool      // the command starts with no_new_privs set
	Grace      time.Duration
	ProofBound time.Duration
	Timeout    time.Duration // 0: none
	// UntilEmpty waits, after the main process exits, until everything it
	// started has finished too (daemons), bounded by Timeout; otherwise the
	// main process's exit ends the run and kills what is left at once.
	UntilEmpty bool
	JSON       bool // print one summary line on stdout at the end
	// SummaryFile, when set (an absolute path), receives the summary line,
	// replacing whatever is there, once the command's tree is proven gone: the
	// command can neither forge nor garble it, as it can a line on the stdout it
	// shares.
	SummaryFile string
	Stdout      io.Writer `json:"-"`
	Stderr      io.Writer `json:"-"`
}

// RunSummary is the --json line and the --summary-file content.
type RunSummary struct {
	SchemaVersion int    `json:"schema_version"`
	Source        string `json:"source"`
	Event         string `json:"event"`
	ExitCode      int    `json:"exit_code"`
	// StatusUnknown: the command's status was lost with a killed helper (its
	// shim or the guardian); ExitCode is then ExitStatusLost.
	StatusUnknown bool   `json:"status_unknown,omitempty"`
	TimedOut      bool   `json:"timed_out,omitempty"`
	ElapsedMs     int64  `json:"elapsed_ms"` // from the command's launch to the proof
	Containment   Report `json:"containment"`
}

func (cfg RunConfig) say(format string, args ...any) {
	fmt.Fprintf(cfg.Stderr, "octostore-supervisor: "+format+"\n", args...)
}

// runEnd is how a run ended.
type runEnd struct {
	code     int  // the main process's status (128+signal when signalled)
	sig      int  // the signal that ended the main process; 0: it exited
	known    bool // code is the main process's status
	lost     bool // a helper rooting the container (shim, guardian) died while the command ran
	timedOut bool
	began    time.Time // the command's launch
	stopped  time.Time // the stop trigger: end of the command (or its tree), timeout, failure
}

// takeStatus records the main process's status from an exit report (sig: the
// signal that ended it, 0 if none): a negative code means the report is of a
// group whose root died, so the status is lost.
func (e *runEnd) takeStatus(code, sig int) {
	if code >= 0 {
		e.code, e.sig, e.known = code, sig, true
	} else {
		e.lost = true
	}
}

// statusLost: the command ran, but its status went with a killed helper.
func (e runEnd) statusLost() bool { return e.lost && !e.known }

// finishRun reports a finished run and returns its exit code: the command's
// status when the container was proven empty, ExitStatusLost when that status
// was lost but the container was proven empty, 70 when the command could not
// be started or emptiness not proven (the survivors named).
func finishRun(cfg RunConfig, e runEnd, rep Report) int {
	rep.DurationMs = time.Since(e.stopped).Milliseconds()
	code := e.code
	switch {
	case !rep.ProvenEmpty:
		for _, s := range rep.Survivors {
			cfg.say("survivor: pid %d state %s command %q", s.Pid, s.State, s.Command)
		}
		cfg.say("containment could not be proved")
		code = ExitSoftware
	case e.statusLost():
		sayProvenEmpty(cfg.Stderr, rep)
		cfg.say("the command's exit status is unknown (a process rooting its container was killed); everything it started was proven gone")
		code = ExitStatusLost
	default:
		sayProvenEmpty(cfg.Stderr, rep)
	}
	rep.Survivors = nil
	if e.known {
		rep.Signal = e.sig
	}
	if rep.LimitHit == "" && e.timedOut {
		rep.LimitHit = LimitTimeout
	}
	sum := RunSummary{SchemaVersion: 1, Source: "octostore-supervisor", Event: "run", ExitCode: code,
		StatusUnknown: e.statusLost(), TimedOut: e.timedOut, ElapsedMs: time.Since(e.began).Milliseconds(), Containment: rep}
	if cfg.SummaryFile != "" {
		b, _ := json.Marshal(sum)
		if err := replaceFile(cfg.SummaryFile, append(b, '\n')); err != nil {
			cfg.say("%v", err)
			code, sum.ExitCode = ExitSoftware, ExitSoftware
		}
	}
	if cfg.JSON {
		b, _ := json.Marshal(sum)
		_, _ = cfg.Stdout.Write(append(b, '\n'))
	}
	return code
}

// sayProvenEmpty is the stderr line every path that proves a worker's (run: the
// command's) tree gone prints, at once: it matters most when no terminal line
// or summary follows.
func sayProvenEmpty(diag io.Writer, rep Report) {
	fmt.Fprintf(diag, "octostore-supervisor: worker group proven empty at %s (%s, %d processes ended)\n",
		events.FormatTimestamp(time.Now()), rep.Backend, rep.Killed)
}

// replaceFile writes data to path atomically (a private temporary file in the
// same directory, renamed over path), mode 0600. On failure whatever was at
// path is removed, so no earlier file can pass for this run's summary.
func replaceFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err == nil {
		tmp := f.Name()
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			_ = os.Remove(tmp)
		}
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("write the summary to %s (any file left there is not this run's): %w", path, err)
	}
	return nil
}
