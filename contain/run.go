package contain

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
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
	JSON       bool          // print one summary line on stdout at the end
	Stdout     io.Writer
	Stderr     io.Writer
}

// RunSummary is the --json line.
type RunSummary struct {
	SchemaVersion int    `json:"schema_version"`
	Source        string `json:"source"`
	Event         string `json:"event"`
	ExitCode      int    `json:"exit_code"`
	TimedOut      bool   `json:"timed_out,omitempty"`
	Containment   Report `json:"containment"`
}

func (cfg RunConfig) say(format string, args ...any) {
	fmt.Fprintf(cfg.Stderr, "octostore-supervisor: "+format+"\n", args...)
}

// finishRun reports a finished run and returns its exit code: the command's
// status when the container was proven empty, else 70 with the survivors named.
func finishRun(cfg RunConfig, code int, timedOut bool, rep Report) int {
	if !rep.ProvenEmpty {
		for _, s := range rep.Survivors {
			cfg.say("survivor: pid %d state %s command %q", s.Pid, s.State, s.Command)
		}
		cfg.say("containment could not be proved")
		code = ExitSoftware
	}
	if cfg.JSON {
		rep.Survivors = nil
		b, _ := json.Marshal(RunSummary{SchemaVersion: 1, Source: "octostore-supervisor", Event: "run", ExitCode: code, TimedOut: timedOut, Containment: rep})
		_, _ = cfg.Stdout.Write(append(b, '\n'))
	}
	return code
}
