package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/octostore-supervisor/supervisor/internal/testkit/pidfile"
)

const usage = `usage: fakehold [flags] STEP...
flags:
  --kind election|lock      coordination kind (default election)
  --name NAME               coordination name (default room)
  --candidate C             election candidate_id (default agent; never on lock events)
  --server URL              server field (default http://127.0.0.1:1)
  --ignore-signals          ignore SIGTERM, SIGINT and SIGHUP
  --on-term MODE            released|uncertain|exit|none (default released)
  --release-delay DUR       wait DUR after the signal before the shutdown event (default 0s)
  --stamps PATH             append "EVENT UNIXNANOS" for each emitted event, taken as it is written
  --pidfile PATH            append "PID STARTTIME" for itself and each spawned process
  --descendant-marker PATH  spawn a TERM/INT/HUP-immune descendant that creates PATH
  --descendant-after DUR    delay before the descendant creates PATH (default 0s)
steps (one argv word each):
  emit:EVENT[,k=v...]       k: term=N budget=MS wall_age=MS cont_age=MS future=MS seq=N
                            kind=K name=NAME candidate=C reason=CODE retry=MS
                            drop=FIELD string=FIELD schema=N extra=1
  raw:TEXT                  print TEXT verbatim
  huge:N                    print N bytes of 'x'
  endless                   print 'x' with no newline, until stdout fails, then block
  sleep:DUR                 sleep (Go duration)
  waitfile:PATH[,timeout=DUR]  wait for PATH (default 30s; timeout exits 3)
  exit:CODE                 exit with CODE
  closeout                  close stdout, keep running
  forever                   block forever (default after the last step)
`

// Exit codes shared with the supervisor's conventions (64 = usage).
const (
	exitUsage       = 64
	exitWaitTimeout = 3
)

// descendantFlag selects the hidden descendant mode. It is only recognised
// as the very first argument, so no scripted invocation reaches it by accident.
const descendantFlag = "--fakehold-internal-descendant"

// errUnsupported is returned by the per-OS helpers for modes this OS lacks.
var errUnsupported = errors.New("mode not supported on this OS")

type config struct {
	kind, name, candidate, server string
	ignoreSignals                 bool
	onTerm                        string
	releaseDelay                  time.Duration
	stamps                        string
	pidfile                       string
	descMarker                    string
	descAfter                     time.Duration
	steps                         []step
}

type stepKind int

const (
	stepEmit stepKind = iota
	stepRaw
	stepHuge
	stepEndless
	stepSleep
	stepWaitfile
	stepExit
	stepCloseout
	stepForever
)

type step struct {
	kind    stepKind
	emit    *emitSpec
	text    string
	n       int
	dur     time.Duration
	path    string
	code    int
	rawWord string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == descendantFlag {
		os.Exit(runDescendant(os.Args[2:]))
	}
	cfg, err := parseArgs(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(os.Stdout, usage)
		os.Exit(0)
	}
	if err != nil {
		fail(err)
	}
	os.Exit(run(cfg))
}

// fail prints one line and exits 64: bad usage must never look like a
// hold outcome.
func fail(err error) {
	fmt.Fprintf(os.Stderr, "fakehold: %v\n", err)
	os.Exit(exitUsage)
}

func parseArgs(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("fakehold", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.kind, "kind", "election", "")
	fs.StringVar(&cfg.name, "name", "room", "")
	fs.StringVar(&cfg.candidate, "candidate", "agent", "")
	fs.StringVar(&cfg.server, "server", "http://127.0.0.1:1", "")
	fs.BoolVar(&cfg.ignoreSignals, "ignore-signals", false, "")
	fs.StringVar(&cfg.onTerm, "on-term", "released", "")
	fs.DurationVar(&cfg.releaseDelay, "release-delay", 0, "")
	fs.StringVar(&cfg.stamps, "stamps", "", "")
	fs.StringVar(&cfg.pidfile, "pidfile", "", "")
	fs.StringVar(&cfg.descMarker, "descendant-marker", "", "")
	fs.DurationVar(&cfg.descAfter, "descendant-after", 0, "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.kind != "election" && cfg.kind != "lock" {
		return nil, fmt.Errorf("--kind must be election or lock, got %q", cfg.kind)
	}
	switch cfg.onTerm {
	case "released", "uncertain", "exit", "none":
	default:
		return nil, fmt.Errorf("--on-term must be released, uncertain, exit or none, got %q", cfg.onTerm)
	}
	if set["descendant-after"] && cfg.descMarker == "" {
		return nil, errors.New("--descendant-after needs --descendant-marker")
	}
	if cfg.descAfter < 0 {
		return nil, errors.New("--descendant-after must not be negative")
	}
	for _, w := range fs.Args() {
		s, err := parseStep(w)
		if err != nil {
			return nil, err
		}
		cfg.steps = append(cfg.steps, s)
	}
	return cfg, nil
}

func parseStep(w string) (step, error) {
	name, rest, hasArg := strings.Cut(w, ":")
	s := step{rawWord: w}
	switch name {
	case "emit":
		if !hasArg {
			return s, fmt.Errorf("step %q: want emit:EVENT[,k=v...]", w)
		}
		e, err := parseEmit(rest)
		if err != nil {
			return s, fmt.Errorf("step %q: %v", w, err)
		}
		s.kind, s.emit = stepEmit, e
	case "raw":
		if !hasArg {
			return s, fmt.Errorf("step %q: want raw:TEXT", w)
		}
		s.kind, s.text = stepRaw, rest
	case "huge":
		n, err := strconv.Atoi(rest)
		if !hasArg || err != nil || n < 0 {
			return s, fmt.Errorf("step %q: want huge:N with N >= 0", w)
		}
		s.kind, s.n = stepHuge, n
	case "sleep":
		d, err := time.ParseDuration(rest)
		if !hasArg || err != nil || d < 0 {
			return s, fmt.Errorf("step %q: want sleep:DUR (Go duration >= 0)", w)
		}
		s.kind, s.dur = stepSleep, d
	case "waitfile":
		if !hasArg || rest == "" {
			return s, fmt.Errorf("step %q: want waitfile:PATH[,timeout=DUR]", w)
		}
		s.kind, s.path, s.dur = stepWaitfile, rest, 30*time.Second
		// The timeout option is recognised only as the final field so that
		// a path may itself contain commas.
		if i := strings.LastIndex(rest, ",timeout="); i >= 0 {
			d, err := time.ParseDuration(rest[i+len(",timeout="):])
			if err != nil || d < 0 || i == 0 {
				return s, fmt.Errorf("step %q: bad timeout", w)
			}
			s.path, s.dur = rest[:i], d
		}
	case "exit":
		c, err := strconv.Atoi(rest)
		if !hasArg || err != nil || c < 0 || c > 255 {
			return s, fmt.Errorf("step %q: want exit:CODE with 0 <= CODE <= 255", w)
		}
		s.kind, s.code = stepExit, c
	case "closeout", "forever", "endless":
		if hasArg {
			return s, fmt.Errorf("step %q takes no argument", w)
		}
		s.kind = map[string]stepKind{"closeout": stepCloseout, "forever": stepForever, "endless": stepEndless}[name]
	default:
		return s, fmt.Errorf("unknown step %q", w)
	}
	return s, nil
}

func run(cfg *config) int {
	// Refuse unsupported modes before anything is printed or spawned, so a
	// test on another OS fails loudly instead of with a half-run script.
	if cfg.pidfile != "" {
		if _, err := pidfile.Line(""); err != nil {
			fail(fmt.Errorf("--pidfile: %w", err))
		}
	}
	if cfg.descMarker != "" && !descendantSupported {
		fail(fmt.Errorf("--descendant-marker: %w", errUnsupported))
	}
	for _, s := range cfg.steps {
		if s.kind == stepEmit && s.emit.budget != nil {
			if _, err := continuousMillis(); err != nil {
				fail(fmt.Errorf("step %q: budget needs the continuous clock: %w", s.rawWord, err))
			}
		}
	}

	h := newHold(cfg)
	h.installSignals()

	if cfg.pidfile != "" {
		if err := appendPidLine(cfg.pidfile); err != nil {
			fmt.Fprintf(os.Stderr, "fakehold: pidfile: %v\n", err)
			return 70
		}
	}
	if cfg.descMarker != "" {
		if err := startDescendant(cfg.descMarker, cfg.descAfter, cfg.pidfile); err != nil {
			fmt.Fprintf(os.Stderr, "fakehold: descendant: %v\n", err)
			return 70
		}
	}

	for _, s := range cfg.steps {
		h.runStep(s)
	}
	blockForever()
	return 0
}

// blockForever sleeps in a loop rather than using select{}: a pending timer
// keeps the runtime's deadlock detector quiet whatever else is running.
func blockForever() {
	for {
		time.Sleep(time.Hour)
	}
}

func (h *hold) runStep(s step) {
	switch s.kind {
	case stepEmit:
		h.withLock(func() { h.emitLocked(s.emit) })
	case stepRaw:
		h.withLock(func() { h.writeLocked([]byte(s.text + "\n")) })
	case stepHuge:
		b := make([]byte, s.n+1)
		for i := 0; i < s.n; i++ {
			b[i] = 'x'
		}
		b[s.n] = '\n'
		h.withLock(func() { h.writeLocked(b) })
	case stepEndless:
		// One line that never ends: a reader that waits for its newline reads
		// for as long as this runs.
		chunk := make([]byte, 4096)
		for i := range chunk {
			chunk[i] = 'x'
		}
		h.withLock(func() {
			for {
				if _, err := h.out.Write(chunk); err != nil {
					return
				}
			}
		})
	case stepSleep:
		time.Sleep(s.dur)
	case stepWaitfile:
		deadline := time.Now().Add(s.dur)
		for {
			if _, err := os.Stat(s.path); err == nil {
				return
			}
			if !time.Now().Before(deadline) {
				h.withLock(func() {
					fmt.Fprintf(os.Stderr, "fakehold: waitfile %s: timed out after %v\n", s.path, s.dur)
					os.Exit(exitWaitTimeout)
				})
			}
			time.Sleep(10 * time.Millisecond)
		}
	case stepExit:
		// Holding the output lock guarantees no signal-time event can be
		// half-written when the process exits.
		h.withLock(func() { os.Exit(s.code) })
	case stepCloseout:
		h.withLock(func() {
			if err := h.out.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "fakehold: closeout: %v\n", err)
			}
		})
	case stepForever:
		blockForever()
	}
}

// onSignal mirrors the real hold's shutdown: it reports the outcome of its
// release attempt and exits 128+signo. If stdout is blocked (for example a
// huge line into a pipe nobody reads), it gives up on the event after 1 s
// rather than becoming accidentally TERM-immune.
func (h *hold) onSignal(code int) {
	select {
	case h.lock <- struct{}{}:
	case <-time.After(time.Second):
		fmt.Fprintln(os.Stderr, "fakehold: stdout blocked; exiting without a shutdown event")
		os.Exit(code)
	}
	// A real hold's release is a network round trip (up to 2 s upstream); a
	// supervisor whose TERM grace is shorter must still wait for it.
	time.Sleep(h.cfg.releaseDelay)
	switch h.cfg.onTerm {
	case "released":
		if h.authority {
			h.emitLocked(&emitSpec{event: "released", fromSignal: true})
		}
	case "uncertain":
		r := "release_unconfirmed"
		h.emitLocked(&emitSpec{event: "uncertain", reason: &r, fromSignal: true})
	}
	os.Exit(code)
}

// appendPidLine records "PID START" (see internal/testkit/pidfile) with a single
// O_APPEND write so that concurrent writers (the hold and its descendant) never
// interleave, and the start time lets a test refuse to signal a recycled pid.
func appendPidLine(path string) error {
	l, err := pidfile.Line("")
	if err != nil {
		return err
	}
	return appendLine(path, l)
}
