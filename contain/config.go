package contain

import (
	"io"
	"os"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/platform/survivor"
)

// Exit codes of the supervisor (README "Exit codes").
const (
	ExitOK             = 0
	ExitAcquireTimeout = 11  // the hold gave up acquiring (error acquire_timeout)
	ExitAuthority      = 20  // authority lost, uncertain, stale or expired
	ExitUsage          = 64  // bad arguments, environment or host
	ExitSoftware       = 70  // protocol violation, hold/worker failure, or containment not proven
	ExitStatusLost     = 71  // a killed helper lost the worker's (run: command's) status; its tree was proven gone
	ExitSIGHUP         = 129 // 128 + signal number, after containment
	ExitSIGINT         = 130
	ExitSIGTERM        = 143
)

// BackendProcessGroup names the process-group backend (per-group subreaper
// shims, pidfd-verified signals, stop-then-kill sweeps) in flags and reports.
const BackendProcessGroup = "process-group"

// WorkerOutput says where the worker's stdout and stderr go.
type WorkerOutput string

const (
	// WorkerOutputStderr sends both to the supervisor's stderr, so stdout carries
	// supervisor lines only and a worker cannot forge them.
	WorkerOutputStderr WorkerOutput = "stderr"
	// WorkerOutputInherit restores the reference supervisor's mixing.
	WorkerOutputInherit WorkerOutput = "inherit"
)

// Config is one supervised run.
type Config struct {
	Kind      events.Kind
	Name      string
	Candidate string   // "" for locks
	Worker    string   // absolute or relative path of an executable file; run with no arguments
	Hold      []string // hold command and its arguments
	// EmbeddedHold says Hold is this program's own hold (Hold[0] is this
	// binary). It is started from the helpers' own image, so it is
	// non-dumpable from its first instruction, and it gets the bearer token on
	// its stdin instead of in its environment.
	EmbeddedHold bool
	// LightHold says the embedded hold's authority needs no etcd client (it
	// is not etcd): a root supervisor then starts it from the hold image
	// bundled with this binary (cmd/octostore-hold), which links none, rather
	// than from this binary, whose etcd client (grpc, protobuf) is most of a
	// hold's memory.
	LightHold bool

	Grace         time.Duration // TERM -> KILL grace, also part of every deadline's reserve
	SilenceCap    time.Duration // locks only: a deadline is never armed further out than this
	RequireReady  bool          // print leader/acquired only after the worker creates its ready file
	ReadyTimeout  time.Duration // how long a required ready file may take
	ReleaseBudget time.Duration // how long the hold gets to release after SIGTERM
	ProofBound    time.Duration // how long teardown waits for the kernel to show a group empty
	WorkerOutput  WorkerOutput
	Backend       Backend   // resolved by ResolveBackend before Supervise
	Isolation     Isolation // resolved by ResolveIsolation before Supervise

	Stdout io.Writer `json:"-"` // supervisor lines
	Stderr io.Writer `json:"-"` // diagnostics
	Env    []string  // the supervisor's environment, passed to the hold; the worker gets it scrubbed

	// Interlock, when set, is a file that must be locked exclusively before the
	// worker starts; it is unlocked only after the worker's tree is proven
	// gone and the terminal line printed. An authority hands a name over when
	// a hold dies or its lease ages out (the local one at once), so without it
	// a second supervisor on this host could start its worker while this
	// one's is still being torn down — or while this supervisor is stopped.
	// The CLI sets one for every authority (the local authority's
	// <name>.active; else one in the user's private state directory). On unix
	// the guardian shares the lock, so it also outlives a supervisor that dies
	// until the guardian has contained the run.
	Interlock *os.File `json:"-"`

	// HostKey is the identity of this authority, kind and name on the whole
	// host (hold/local.HostKey): it names the host lock that backs the
	// interlock where the platform has one (Linux), so runs of one name
	// serialize whatever state directory, user or spelling of the authority
	// each was started with. Empty: the interlock file's path names it.
	HostKey string

	// Survivors, when set, is this host's record of processes that outlived a
	// failed containment of the same authority and name. A run starts its hold
	// only once every recorded process is gone, checks again once it holds the
	// interlock, and removes the record before its worker starts; a run whose
	// containment fails adds its survivors before it lets go of the interlock.
	Survivors *survivor.Record `json:"-"`

	// AcquireTimeout bounds the waits for the interlock and for recorded
	// survivors (measured from the start of the run), as --acquire-timeout
	// bounds the hold's acquisition; 0 waits until a signal.
	AcquireTimeout time.Duration

	// holdImage is set when this process continues the run in the lean
	// helper image (SuperviseLean): what the embedded hold starts from (the
	// supervisor's own binary, or the hold image). nil when this process is
	// that binary.
	holdImage *os.File

	// Pause, when set, is called at named points of the lifecycle. Only a binary
	// built with the octostore_testhooks tag sets it, to freeze the supervisor at
	// an exact point; there is no runtime switch a worker could reach.
	Pause func(point string) `json:"-"`
}

// Defaults used by the CLI.
const (
	DefaultGrace         = time.Second
	DefaultSilenceCap    = 20 * time.Second
	DefaultReadyTimeout  = 10 * time.Second
	DefaultReleaseBudget = 3 * time.Second
	DefaultProofBound    = 5 * time.Second
)

// SecretEnv are removed from the worker's environment: the hold needs them, the
// protected work must not be able to act as the holder (the bearer token or
// etcd's user:password, and the etcd client key's path).
var SecretEnv = []string{"OCTOSTORE_TOKEN", "OCTOSTORE_TOKEN_FILE", "OCTOSTORE_ETCD_KEY"}

// Report is what a teardown proved.
type Report struct {
	Backend     string     `json:"backend"`
	ProvenEmpty bool       `json:"proven_empty"`
	Killed      int        `json:"killed"`
	DurationMs  int64      `json:"duration_ms"`
	Survivors   []Survivor `json:"survivors,omitempty"`
	// Limit says what the proof cannot cover on this platform (macOS: a
	// process that left the group, its session and our parent chain unseen).
	// Empty, and so absent from the JSON, where nothing escapes the proof.
	Limit string `json:"limit,omitempty"`

	CPUMicros       uint64 `json:"cpu_usec,omitempty"`          // cgroup: CPU time of the whole group
	MemoryPeakBytes uint64 `json:"memory_peak_bytes,omitempty"` // cgroup with the memory controller
	// OOMKills is the kernel's count of OOM kills in the group (cgroup:
	// memory.events oom_kill; a group kill counts its first victim twice),
	// where it reports them.
	OOMKills uint64 `json:"oom_kills,omitempty"`
	// LimitHit is the limit that ended the tree, the first of LimitMemory,
	// LimitPids and LimitTimeout that applies; empty when none did.
	LimitHit string `json:"limit_hit,omitempty"`
	// Signal is the signal that ended the worker's (run: the command's)
	// main process; 0 when it exited, or its status is unknown.
	Signal int `json:"signal,omitempty"`
}

// Survivor is a process still alive after the final kill and the proof bound.
type Survivor struct {
	Pid     int    `json:"pid"`
	Start   uint64 `json:"start,omitempty"` // procid.ID.Start; 0 where unknown
	State   string `json:"state"`
	Command string `json:"command"`
}

func (r *Report) merge(o Report) {
	if r.Backend == "" {
		r.Backend = o.Backend
	}
	if r.Limit == "" {
		r.Limit = o.Limit
	}
	r.Killed += o.Killed
	r.DurationMs = max(r.DurationMs, o.DurationMs)
	r.Survivors = append(r.Survivors, o.Survivors...)
}
