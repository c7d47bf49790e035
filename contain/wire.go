package contain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// msg is one message between supervisor, guardian and shims. The channels are
// anonymous socketpairs inherited at start; nothing else in the system can write to
// them, so unlike the reference's files and FIFOs they cannot be forged by a worker.
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
	Ungated    bool       `json:"ungated,omitempty"`  // init: run mode, start the worker at once
	WorkerArgv []string   `json:"worker_argv,omitempty"`
	WorkerEnv  []string   `json:"worker_env,omitempty"`
	Isolation  *Isolation `json:"isolation,omitempty"`    // init, shim init: how the worker is isolated
	NoNewPrivs bool       `json:"no_new_privs,omitempty"` // init, shim init: run mode's worker starts with no_new_privs
	GraceMs    int64      `json:"grace_ms,omitempty"`
	NoGrace    bool       `json:"no_grace,omitempty"` // contain: kill at once, no TERM phase
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

// Operations.
const (
	opInit    = "init"    // supervisor -> guardian, guardian -> shim
	opReady   = "ready"   // reply to init
	opArm     = "arm"     // supervisor -> guardian: a new deadline generation
	opStart   = "start"   // start the gated worker
	opContain = "contain" // tear a group down and prove it empty
	opRelease = "release" // SIGTERM the hold's own process so it can release the lease
	opExit    = "exit"    // orderly end
	opExited  = "exited"  // a group's main process ended (notification)
	opExpired = "expired" // the armed deadline fired; the worker group was contained (notification)
	opSignal  = "signal"  // run: forward a signal to every member of the worker group
	opProbe   = "probe"   // run --until-empty: how many processes of a group still run
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
