package contain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
	"github.com/octostore-supervisor/supervisor/platform/survivor"
)

// SuperviseLean runs Supervise, as root in the lean helper image rather than
// in this binary where that image is bundled: it hands the run over to the
// image through execve, in this same process, before anything of the run
// exists.
//
// Why: this binary links the authorities' clients (grpc, protobuf, the etcd
// client, net/http), whose package initialisation touches about 11 MB of it
// in every process that starts from it, and allocates on the heap. The
// supervisor runs none of that code once its command line is parsed and its
// state directory opened, yet would carry it for the whole run, as the
// largest process of every run (docs/benchmarks.md, "Idle supervision").
//
// Root only, as for the helpers (helperImage): a non-root supervisor's helpers
// start from a sealed copy of this whole binary, and so does the embedded
// hold, so running the supervisor from the lean image would add a process
// image rather than drop one. Where the run cannot be handed over (no bundled
// image; a caller's own writers or test hooks, which cannot cross an exec)
// it runs here, in this binary.
func SuperviseLean(ctx context.Context, cfg Config) int {
	if cfg.Pause == nil && ownOutput(cfg.Stdout, cfg.Stderr) {
		continueLean(cfg.Stderr, handover{Supervise: &cfg})
	}
	return Supervise(ctx, cfg)
}

// RunLean is Run, continued in the lean helper image as SuperviseLean is.
func RunLean(ctx context.Context, cfg RunConfig) int {
	if ownOutput(cfg.Stdout, cfg.Stderr) {
		continueLean(cfg.Stderr, handover{Run: &cfg})
	}
	return Run(ctx, cfg)
}

// ownOutput: the run writes to this process's own stdout and stderr, which
// cross an exec as they are; any other writer cannot.
func ownOutput(stdout, stderr io.Writer) bool { return stdout == os.Stdout && stderr == os.Stderr }

// continueLean execs the lean image with h, as root where the image is
// bundled. It returns only where it did not: nothing of the run has started,
// and the caller runs it in this binary.
func continueLean(diag io.Writer, h handover) {
	if os.Geteuid() != 0 {
		return
	}
	lean, err := leanHelper(helperCaches()...)
	if err != nil || lean == nil {
		// The guardian's launch says why there is no lean image
		// (rootImages); it is the same question, asked once.
		return
	}
	defer lean.Close()
	err = handOver(diag, lean, h)
	// handOver returns only when execve failed, before the point of no
	// return: this process is still this binary.
	fmt.Fprintf(diag, "octostore-supervisor: the supervisor continues in this binary, not the lean helper image: %v\n", err)
}

// handover is the run as it crosses the execve: the configuration's plain
// fields, and the numbers of the descriptors the lean image inherits for the
// rest (0 for none: 0-2 are stdin, stdout and stderr, never one of these).
type handover struct {
	Supervise *Config    `json:"supervise,omitempty"`
	Run       *RunConfig `json:"run,omitempty"`
	Comm      string     `json:"comm"`      // this process's name, kept across the exec
	Interlock int        `json:"interlock"` // Config.Interlock
	// InterlockPath is its name, which keys the host lock (hostGate.lock).
	InterlockPath string `json:"interlock_path"`
	HoldImage     int    `json:"hold_image"` // the embedded hold's image (Config.holdImage)
	Survivors     *kept  `json:"survivors"`  // Config.Survivors; nil when none
}

// kept is a survivor record's handover (survivor.Record.Handover).
type kept struct {
	Dir     int          `json:"dir"`
	DirPath string       `json:"dir_path"`
	Rel     string       `json:"rel"`
	Key     survivor.Key `json:"key"`
}

// handOver writes h into a memfd and execs the lean image with it and the
// descriptors it names inherited. It returns only on failure.
func handOver(diag io.Writer, lean *os.File, h handover) error {
	var inherit []*os.File
	if h.Supervise != nil {
		// This binary, opened now, so the embedded hold runs the very
		// binary that was started (or the hold image bundled with it) even
		// if the file is replaced meanwhile (rootImages).
		self, err := os.Open("/proc/self/exe")
		if err != nil {
			return fmt.Errorf("open this program: %w", err)
		}
		holdImage := embeddedHoldImage(self, h.Supervise.LightHold, diag)
		defer holdImage.Close()
		inherit = h.descriptors(holdImage)
	}
	if comm, err := os.ReadFile("/proc/self/comm"); err == nil {
		h.Comm = strings.TrimSpace(string(comm))
	}
	run, err := handoverFile(h)
	if err != nil {
		return err
	}
	defer run.Close()
	inherit = append(inherit, run)
	// The descriptors were opened close-on-exec; the lean image gets exactly
	// these, and marks them close-on-exec again at once (adoptInherited).
	for _, f := range inherit {
		if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFD, 0); err != nil {
			closeOnExec(inherit)
			return fmt.Errorf("hand a descriptor over: %w", err)
		}
	}
	// The original words follow the run's descriptor, so that ps shows what
	// was asked for; the lean image reads the run from the descriptor alone.
	argv := append([]string{os.Args[0], SuperviseArg, strconv.Itoa(int(run.Fd()))}, os.Args[1:]...)
	// The lean supervisor starts with one P, as the helpers do (helperProcs),
	// set before its runtime starts. Ours comes first, which is the one Go
	// reads; the caller's environment follows unchanged, and what the hold
	// and the worker get is the configuration's copy of it (Config.Env,
	// RunConfig.Env), taken before this exec.
	env := append([]string{"GOMAXPROCS=" + strconv.Itoa(helperProcs)}, os.Environ()...)
	err = syscall.Exec("/proc/self/fd/"+strconv.Itoa(int(lean.Fd())), argv, env)
	closeOnExec(inherit) // the exec failed: they are this process's alone again
	return fmt.Errorf("execve: %w", err)
}

func closeOnExec(files []*os.File) {
	for _, f := range files {
		unix.CloseOnExec(int(f.Fd()))
	}
}

// descriptors fills in what a supervised run hands over besides its
// configuration (holdImage: the embedded hold's image, open), and returns the
// files to inherit.
func (h *handover) descriptors(holdImage *os.File) []*os.File {
	cfg := h.Supervise
	inherit := []*os.File{holdImage}
	h.HoldImage = int(holdImage.Fd())
	if cfg.Interlock != nil {
		h.Interlock, h.InterlockPath = int(cfg.Interlock.Fd()), cfg.Interlock.Name()
		inherit = append(inherit, cfg.Interlock)
	}
	if cfg.Survivors != nil {
		dir, dirPath, rel, key := cfg.Survivors.Handover()
		h.Survivors = &kept{Dir: int(dir.Fd()), DirPath: dirPath, Rel: rel, Key: key}
		inherit = append(inherit, dir)
	}
	return inherit
}

// handoverFile is h in a memfd (its size is not bounded, as a pipe's would
// be, by what a reader takes before the writer blocks).
func handoverFile(h handover) (*os.File, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode the run: %w", err)
	}
	fd, err := unix.MemfdCreate("octostore-supervisor-run", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "octostore-supervisor-run")
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the run: %w", err)
	}
	return f, nil
}

// superviseMain is the supervisor continued in the lean image (SuperviseArg):
// it takes the run over from the descriptor named in args[0] and runs it.
func superviseMain(args []string) int {
	h, err := takeOver(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "octostore-supervisor: continue in the lean helper image: %v\n", err)
		return ExitSoftware
	}
	if h.Run != nil {
		cfg := *h.Run
		cfg.Stdout, cfg.Stderr = os.Stdout, os.Stderr
		return Run(context.Background(), cfg)
	}
	cfg, err := h.config()
	if err != nil {
		fmt.Fprintf(os.Stderr, "octostore-supervisor: continue in the lean helper image: %v\n", err)
		return ExitSoftware
	}
	code := Supervise(context.Background(), cfg)
	if cfg.Survivors != nil {
		_ = cfg.Survivors.Close()
	}
	return code
}

// takeOver reads the run handed over (handOver).
func takeOver(runFd string) (handover, error) {
	var h handover
	fd, err := strconv.Atoi(runFd)
	if err != nil || fd < 3 {
		return h, fmt.Errorf("bad run descriptor %q", runFd)
	}
	run := os.NewFile(uintptr(fd), "octostore-supervisor-run")
	// From offset 0: the writer left the offset at the end.
	err = json.NewDecoder(io.NewSectionReader(run, 0, 1<<30)).Decode(&h)
	run.Close()
	if err != nil {
		return h, fmt.Errorf("decode the run: %w", err)
	}
	if h.Supervise == nil && h.Run == nil {
		return h, errors.New("the run handed over is empty")
	}
	if h.Comm != "" {
		// Exec named this process after the descriptor's number. The
		// leader's name is what ps shows; prctl would name only the calling
		// thread, which need not be the leader.
		_ = os.WriteFile("/proc/self/comm", []byte(h.Comm), 0)
	}
	return h, nil
}

// config rebuilds a supervised run's Config from its handover.
func (h handover) config() (Config, error) {
	cfg := *h.Supervise
	cfg.Stdout, cfg.Stderr = os.Stdout, os.Stderr
	if h.Interlock != 0 {
		cfg.Interlock = os.NewFile(uintptr(h.Interlock), h.InterlockPath)
	}
	if h.HoldImage == 0 {
		return cfg, errors.New("the embedded hold's image was not handed over")
	}
	cfg.holdImage = os.NewFile(uintptr(h.HoldImage), "embedded-hold-image")
	if k := h.Survivors; k != nil {
		dir, err := openHandedDir(k.Dir, k.DirPath)
		if err != nil {
			return cfg, err
		}
		cfg.Survivors = survivor.New(dir, k.Rel, k.Key)
	}
	return cfg, nil
}

// handedDir is the private state directory the supervisor's own binary
// opened and judged (hold/local), continued here as a survivor.Dir. Entries
// are judged by the rule of that private directory (hold/local's
// entryRules for one not shared with a group), which cannot be imported
// here: that package links the authorities' clients.
type handedDir struct {
	root *os.Root
	self *os.File
	path string
}

func openHandedDir(fd int, path string) (*handedDir, error) {
	self := os.NewFile(uintptr(fd), path)
	// The descriptor's /proc link opens the very directory it refers to,
	// whatever its path names now.
	root, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		self.Close()
		return nil, fmt.Errorf("open the state directory %s: %w", path, err)
	}
	return &handedDir{root: root, self: self, path: path}, nil
}

func (d *handedDir) OpenExisting(rel string) (*os.File, error) {
	f, err := d.root.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("fstat %s: %w", d.Join(rel), err)
	}
	perm := st.Mode & 0o777
	switch {
	case perm&0o022 != 0:
		err = fmt.Errorf("%s is writable by its group or every user (mode %04o); refusing it", d.Join(rel), perm)
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		err = fmt.Errorf("%s is owned by another user (uid %d); refusing it", d.Join(rel), st.Uid)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (d *handedDir) WriteReplace(tmp, rel string, b []byte) error {
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = f.Chmod(0o600) // whatever the umask made of it
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.root.Rename(tmp, rel)
	}
	if err == nil {
		err = platform.SyncDir(d.self)
	}
	return err
}

func (d *handedDir) Remove(rel string) error { return d.root.Remove(rel) }

func (d *handedDir) Join(rel string) string { return filepath.Join(d.path, filepath.FromSlash(rel)) }

func (d *handedDir) Handle() (*os.File, string) { return d.self, d.path }

func (d *handedDir) Close() error { return errors.Join(d.root.Close(), d.self.Close()) }

var _ survivor.Dir = (*handedDir)(nil)
