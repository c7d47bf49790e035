package contain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The messages of a supervised run on unix, in the order they are sent. S is
// the supervisor, G its guardian, H and W the processes that root the hold's
// and the worker's groups (a shim each, ShimMain; for the embedded hold, H is
// the hold itself, HoldRootMain, which speaks the shim's side), and P a
// group's program. Each arrow between S, G, H and W is one msg on a
// socketpair that the parent made (socketpair) and the child inherited as fd
// 3 (fdCtl): one S-G pair per run, one G-H and one G-W pair. S makes one
// request at a time and takes the reply that repeats its ID (one to a request
// that timed out is dropped). G's requests to a root carry no ID: G reads the
// answer to init before it reads anything else from that root, and W answers
// start before it can report an exit. The double arrows are not messages:
// they are lines of the hold's event stream.
//
//	S                 G                 H                 W
//	|-- start G ----->|                 |                 |  (1)
//	|-- init -------->|                 |                 |
//	|                 |-- start H ----->|                 |  (2)
//	|                 |-- init -------->|                 |
//	|                 |                 |  starts P       |
//	|                 |<------- ready --|                 |
//	|                 |-- start W ----------------------->|  (2)
//	|                 |-- init -------------------------->|  (3)
//	|                 |<------------------------- ready --|
//	|<------- ready --|                 |                 |
//	|<======================== events ==|                 |  (4)
//	|-- arm --------->|                 |                 |  (5)
//	|<--------- arm --|                 |                 |
//	|-- start ------->|                 |                 |
//	|                 |-- start ------------------------->|  (5)
//	|                 |                 |                 |  starts P
//	|                 |<------------------------- start --|
//	|<------- start --|                 |                 |
//	|                 |<------------------------ exited --|  (6)
//	|<------ exited --|                 |                 |  (6)
//	|<----- expired --|                 |                 |  (6)
//	|  stop, where every run ends:
//	|-- contain ----->|                 |                 |  (7)
//	|<----- contain --|                 |                 |
//	|-- release ----->|                 |                 |  (7)
//	|                 |-- release ----->|                 |
//	|<----- release --|                 |                 |
//	|<====================== released ==|                 |
//	|-- exit -------->|                 |                 |  (7)
//	|<-------- exit --|                 |                 |
//
//  1. GuardianArg, in a session of its own. Its fds: 0 the hold's stdin (a
//     pipe holding the bearer token, or /dev/null), 3 its end of the S-G
//     pair, 4 the event channel's write end, 5 the worker's output, 6 on what
//     it keeps open for the run (the interlock and the host lock, a
//     --worker-user claim) and, where it runs the lean image, the embedded
//     hold's image (HoldImageFd).
//  2. ShimArg, each in a process group of its own; G starts H, sends init and
//     reads ready before it starts W. Their fds: 0 the program's stdin (H:
//     G's fd 0; W: /dev/null), 3 their end of their pair with G, 4 and 5 the
//     program's stdout and stderr (H: the event channel and G's stderr; W:
//     G's fd 5 and stderr, or a --worker-user worker's relay pipes), 6 the
//     group's cgroup leaf under the cgroup backend (shims only), then W's
//     StartFd. The embedded hold's H is started through HoldRootArg and
//     starts no P.
//  3. W's init is gated: W starts nothing until start, except the worker's
//     waiting helper (the pre-start helper, or under --private-pids the
//     namespace's init), which waits on a channel of G's (waitingHelper).
//  4. P's stdout is the event channel. G passes its write end to H and closes
//     its own copy, so the events go from the hold to S and G never reads one.
//  5. arm: at leader or acquired and at each renewal, deadline generation
//     gen+1 only. G starts W's program only before the armed deadline: it
//     checks it as it writes the start to the waiting helper, or start
//     carries it (FireMs) to W, which checks it again before the exec.
//  6. Notifications. exited: P ended; from G with Code -1, Err and Report
//     when a shim itself died, after G contained its group (the embedded
//     hold's death is its own exit). expired: the armed deadline fired and G
//     contained W's group on its own clock, whatever S was doing.
//  7. The one teardown (run.stop). contain: the worker group, W's tree proven
//     empty, W killed. release: only once that is proven, and only if the
//     hold has neither ended nor sent its terminal event (H sends P SIGTERM,
//     the embedded hold sends it to itself; H does not reply, the hold's
//     terminal event does). exit: G contains H's group and whatever else is
//     left below it (NoGrace, without a TERM the hold could release on, when
//     the worker group was not proven empty), replies with the proof and
//     ends; S reaps it.
//
// A socket that closes says something too. G reading EOF from S contains both
// groups at once and says so on stderr; H or W reading EOF from G kill their
// own tree (the embedded hold exits); G reading EOF from H or W before it
// killed them contains that group (the exited of note 6).
//
// `run` has no H: its init is Ungated, so W starts the command at once and
// its ready carries the pid; then signal and probe (answered by G, which
// signals or counts W's tree itself), contain and exit, without arm, start or
// release. On Windows there is no G, H or W: the job-object host
// (host_windows.go) hands the lifecycle the same exited and expired
// notifications in process.

// msg is one message between supervisor, guardian and shims: one struct for
// every operation, of which each uses a few fields (listed with the operations
// below). The channels are anonymous socketpairs inherited at start; nothing
// else in the system can write to them, so unlike the reference's files and
// FIFOs they cannot be forged by a worker.
type msg struct {
	Op    string `json:"op"`
	Reply bool   `json:"reply,omitempty"` // answers the request with the same ID
	ID    uint64 `json:"id,omitempty"`
	Group string `json:"group,omitempty"`
	Err   string `json:"err,omitempty"`

	Gen    uint64 `json:"gen,omitempty"`
	FireMs int64  `json:"fire_ms,omitempty"`
	KillMs int64  `json:"kill_ms,omitempty"`

	Gated      bool       `json:"gated,omitempty"`
	Argv       []string   `json:"argv,omitempty"`
	Env        []string   `json:"env,omitempty"`
	Backend    *Backend   `json:"backend,omitempty"`  // init: the resolved containment backend
	RunName    string     `json:"run_name,omitempty"` // init: the run's cgroup directory name
	Leaf       string     `json:"leaf,omitempty"`     // shim init: the group's cgroup leaf (fd 6 holds it open)
	Join       bool       `json:"join,omitempty"`     // shim init: clone3 is refused; join the leaf by re-exec
	StartFd    int        `json:"start_fd,omitempty"` // gated worker's shim init: its waiting helper's start channel
	Ungated    bool       `json:"ungated,omitempty"`  // init: run mode, start the worker at once
	WorkerArgv []string   `json:"worker_argv,omitempty"`
	WorkerEnv  []string   `json:"worker_env,omitempty"`
	Isolation  *Isolation `json:"isolation,omitempty"`    // init, shim init: how the worker is isolated
	NoNewPrivs bool       `json:"no_new_privs,omitempty"` // init, shim init: run mode's worker starts with no_new_privs
	GraceMs    int64      `json:"grace_ms,omitempty"`
	NoGrace    bool       `json:"no_grace,omitempty"` // contain, exit: kill at once, no TERM phase
	ProofMs    int64      `json:"proof_ms,omitempty"`
	// init: containment reports carry each cgroup leaf's CPU time, peak
	// memory and the limit it hit (run --json prints them); supervise asks
	// only when a limit was given (Backend.Limited) and otherwise leaves the
	// reads off its teardown
	Stats bool `json:"stats,omitempty"`
	// init: Argv is this binary's embedded hold, which roots its own group
	// (HoldRootMain) instead of running under a shim
	EmbeddedHold bool `json:"embedded_hold,omitempty"`
	// init: the guardian's descriptor of the supervisor's binary, where the
	// embedded hold is, when the helpers run the lean helper image; the
	// guardian starts the hold's root through it (spawnHoldRoot)
	HoldImageFd int `json:"hold_image_fd,omitempty"`

	Pid    int     `json:"pid,omitempty"`
	Exited bool    `json:"exited,omitempty"` // contain reply: Code/Signal are the program's exit
	Code   int     `json:"code"`
	Signal int     `json:"signal,omitempty"`
	Report *Report `json:"report,omitempty"`
	Live   int     `json:"live,omitempty"` // probe reply: processes still running in the group
}

// Operations, and the fields of msg each one uses besides Op (S supervisor,
// G guardian, H and W the roots of the hold and worker groups, as drawn at
// the top of this file). A request from S carries ID, and its reply repeats
// ID with Reply set; a reply's Op is its request's, except that init is
// answered by ready. Err in a reply says the request failed. Requests from G
// to a root carry no ID, and notifications neither ID nor Reply. A field not
// listed for an operation is left unset.
//
//	op       from -> to       request                     reply
//	init     S -> G           Argv Env EmbeddedHold       ready: Err
//	                          HoldImageFd WorkerArgv
//	                          WorkerEnv Ungated Isolation
//	                          NoNewPrivs Backend RunName
//	                          GraceMs ProofMs Stats
//	init     G -> H (shim)    Argv Env Leaf Join          ready: Pid Err
//	init     G -> H (hold)    -                           ready: Pid
//	init     G -> W           Gated Argv Env Isolation    ready: Pid Err
//	                          NoNewPrivs Leaf Join
//	                          StartFd
//	arm      S -> G           Gen FireMs KillMs           Err
//	start    S -> G           Env                         Pid Err
//	start    G -> W           Env FireMs, or Pid          Pid Err
//	contain  S -> G           Group NoGrace               Report Exited Code
//	                                                      Signal Err
//	release  S -> G           -                           -
//	release  G -> H           -                           (none)
//	exit     S -> G           NoGrace                     Report
//	signal   S -> G (run)     Signal                      -
//	probe    S -> G (run)     Group                       Live Err
//	exited   W, H -> G        Code Signal Pid             (notification)
//	exited   G -> S           Group Code Signal, or for   (notification)
//	                          a dead shim Group Code(-1)
//	                          Err Report
//	expired  G -> S           Gen Report                  (notification)
//
// Leaf and Join are set only under the cgroup backend. StartFd is set when
// the gated worker has a waiting helper (waitingHelper): the shim starts it
// with that descriptor as its start channel and answers ready with its Pid;
// at the gate G starts the worker through the channel itself and sends start
// with the Pid to watch instead of Env and FireMs. ready's Pid is otherwise
// the program's when the root started it at once (H's, and W's in run), the
// hold's own from the embedded hold; the embedded hold's exited has Code
// only. A program's exit that G takes during a teardown is not forwarded as
// exited but returned in contain's reply (Exited, Code, Signal).
const (
	opInit    = "init"    // S -> G, G -> H and W: start the groups
	opReady   = "ready"   // the reply to init
	opArm     = "arm"     // S -> G: a new deadline generation
	opStart   = "start"   // S -> G -> W: start the gated worker
	opContain = "contain" // S -> G: tear a group down and prove it empty
	opRelease = "release" // S -> G -> H: SIGTERM the hold's own process so it can release the lease
	opExit    = "exit"    // S -> G: contain everything left and end
	opExited  = "exited"  // W, H -> G -> S: a group's main process ended (notification)
	opExpired = "expired" // G -> S: the armed deadline fired; the worker group was contained (notification)
	opSignal  = "signal"  // S -> G, run: forward a signal to every member of the worker group
	opProbe   = "probe"   // S -> G, run --until-empty: how many processes of a group still run
)

// conn is a JSON-lines channel. Writes are serialised; reads happen on one
// goroutine. Both directions keep their encoder, decoder and message in the
// conn, so the messages of a long run (an arm and its reply per renewal) are
// sent and read without allocating: nothing of a helper's heap grows with the
// renewals.
type conn struct {
	mu   sync.Mutex // guards enc, out and sent
	w    io.Writer
	enc  *json.Encoder // writes into out; Encode ends each message with "\n"
	out  bytes.Buffer
	sent msg // the message being encoded (a field: passing a local would allocate)

	dec *json.Decoder // reads the whole values the peer wrote, one per line
	got msg
	c   io.Closer
}

func newConn(rwc io.ReadWriteCloser) *conn {
	c := &conn{w: rwc, dec: json.NewDecoder(rwc), c: rwc}
	c.enc = json.NewEncoder(&c.out)
	return c
}

func (c *conn) send(m msg) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.Reset()
	c.sent = m
	if err := c.enc.Encode(&c.sent); err != nil {
		return fmt.Errorf("encode %s message: %w", m.Op, err)
	}
	if _, err := c.w.Write(c.out.Bytes()); err != nil {
		return fmt.Errorf("send %s message: %w", m.Op, err)
	}
	return nil
}

// recv reads the next message. It is not safe for concurrent use (pump is
// its one caller in production).
func (c *conn) recv() (msg, error) {
	c.got = msg{}
	if err := c.dec.Decode(&c.got); err != nil {
		if errors.Is(err, io.EOF) {
			return msg{}, err
		}
		return msg{}, fmt.Errorf("decode message: %w", err)
	}
	return c.got, nil
}

func (c *conn) close() error { return c.c.Close() }

// pump reads messages until EOF and delivers them; the channel is closed at the end.
func (c *conn) pump() <-chan msg {
	ch := make(chan msg, 16)
	go func() {
		defer close(ch)
		for {
			m, err := c.recv()
			if err != nil {
				return
			}
			ch <- m
		}
	}()
	return ch
}
