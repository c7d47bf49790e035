package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/platform"
	"github.com/octostore-supervisor/supervisor/platform/procid"
)

// privateServer is the --server value that selects the per-user default
// state directory (OpenPrivate). "file:///path/to/dir" selects a directory
// that may be shared by the members of a group.
const privateServer = "local"

// defaultPoll is how often a waiting local hold retries its lock
// and how often a local watch re-reads the status.
const defaultPoll = 250 * time.Millisecond

// maxEscapedName keeps "<escaped>.holder.tmp" within the 255-byte file-name
// limit of the file systems we run on.
const maxEscapedName = 255 - len(".holder.tmp")

// reasonLockGone is what a hold reports when the file it locked is no longer
// the one at its path (deleted, or replaced by another). It is the code the
// HTTP authority sends when a different lease now holds the name, which is
// exactly what a replaced lock file means.
const reasonLockGone = "lease_not_current"

// reasonFailure is the error code of a local I/O failure before
// authority: the authority itself failed, as a server's internal_error.
const reasonFailure = hold.CodeInternalError

// Usage-error classes of the local authority (exit 64).
var (
	errStateDir = errors.New("unusable local state directory")
	errName     = errors.New("invalid local authority name")
)

// errTermRewound means the fencing counter reads less than a term the store
// already recorded as issued: someone rewound it (or restored an old copy).
// Handing out the next value would repeat a term, so acquisition fails.
var errTermRewound = errors.New("the fencing counter was rewound")

// errLost marks a proof that the lock is no longer ours.
var errLost = errors.New("local lock is no longer held")

// IsServer reports whether a resolved --server / OCTOSTORE_URL value
// selects the local authority ("local" or a file: URL) rather than an HTTP
// server. The CLI then calls Open instead of hold.ValidateServer.
func IsServer(raw string) bool {
	s := strings.TrimSpace(raw)
	if s == privateServer {
		return true
	}
	scheme, _, ok := strings.Cut(s, ":")
	return ok && strings.EqualFold(scheme, "file")
}

// Store is an opened, validated state directory: the host-local
// hold.Authority. All file access goes through an os.Root on the directory
// that was checked, so neither a rename of the directory nor a symlink inside
// it can redirect the authority elsewhere.
type Store struct {
	dir    string
	server string
	shared bool
	root   *os.Root
	self   *os.File // the directory itself, for fsync after creating files

	entries           entryRules // whose entries the directory may hold
	fileMode, dirMode fs.FileMode

	// poll is how often a waiting hold retries its lock and a watch re-reads
	// the status; 0 means defaultPoll. Tests shorten it.
	poll time.Duration
}

var _ hold.Authority = (*Store)(nil)

// Open validates raw ("local" or "file:///abs/dir", see
// IsServer) and opens its state directory. "local" uses
// $XDG_RUNTIME_DIR/octostore, else <TMPDIR or /tmp>/octostore-<uid>
// (%LOCALAPPDATA%\octostore on Windows), creating it 0700; a file: directory
// must exist and may be group-shared. A symlink, a directory others may write
// to (world-writable without the sticky bit; for "local" also group-writable),
// one owned by another user (for "local"), or one on a network file system
// (NFS, SMB/CIFS, sshfs) is refused with a one-line *UsageError (exit 64), as
// are existing entries someone else could have planted or may change (see
// entryRules: only a group-writable, not world-writable file: directory
// shares its entries with its group).
// env supplies the environment (os.LookupEnv in production). The caller must
// Close the store.
func Open(raw string, env hold.LookupEnv) (*Store, error) {
	s := strings.TrimSpace(raw)
	if s == privateServer {
		return OpenPrivate(env)
	}
	dir, server, err := parseFileServer(s)
	if err != nil {
		return nil, err
	}
	return openDir(dir, server, true)
}

// OpenPrivate opens the per-user state directory that --server local names
// (see Open): where the supervisor keeps its survivor records and
// interlocks (OpenSupervised).
func OpenPrivate(env hold.LookupEnv) (*Store, error) {
	dir, err := defaultLocalDir(env)
	if err != nil {
		return nil, err
	}
	if err := checkParents(dir); err != nil {
		return nil, err
	}
	return openDir(dir, privateServer, false)
}

func usageError(class error, msg string) *hold.UsageError {
	return &hold.UsageError{Msg: msg, Class: class}
}

// parseFileServer turns file:///abs/dir into the directory and the normalised
// URL that becomes the "server" field of every event.
func parseFileServer(raw string) (dir, server string, err error) {
	bad := func(why string) error {
		return usageError(hold.ErrInvalidServerURL, "invalid server URL: "+why)
	}
	if strings.ContainsAny(raw, "?#") {
		return "", "", usageError(hold.ErrServerQuery, "server URL must not contain a query or fragment")
	}
	u, perr := url.Parse(raw)
	if perr != nil {
		return "", "", bad("the file URL could not be parsed")
	}
	if u.User != nil {
		return "", "", usageError(hold.ErrServerCredentials, "credentials are not allowed in the server URL")
	}
	if u.Opaque != "" || (u.Host != "" && !strings.EqualFold(u.Host, "localhost")) ||
		strings.ContainsRune(u.Path, 0) {
		return "", "", bad("a file URL must name an absolute local directory, like file:///path/to/dir")
	}
	dir, ok := dirFromFileURLPath(u.Path)
	if !ok {
		return "", "", bad("a file URL must name an absolute local directory, like file:///path/to/dir")
	}
	return dir, (&url.URL{Scheme: "file", Path: fileURLPath(dir)}).String(), nil
}

// stateDirError builds the one-line refusal of a state directory; control
// characters in a path are escaped so the message stays one line.
func stateDirError(format string, args ...any) error {
	return stateDirErrorCause(nil, format, args...)
}

func stateDirErrorCause(cause error, format string, args ...any) error {
	return &hold.UsageError{Msg: hold.TerminalSafe(fmt.Sprintf(format, args...)), Class: errStateDir, Cause: cause}
}

func openDir(dir, server string, shared bool) (*Store, error) {
	st := &Store{dir: dir, server: server, shared: shared}
	if !shared {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, stateDirErrorCause(err, "could not create local state directory %s: %s", dir, hold.OSErrorText(err))
		}
	}
	lfi, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, stateDirError("local state directory %s does not exist", dir)
		}
		return nil, stateDirErrorCause(err, "could not inspect local state directory %s: %s", dir, hold.OSErrorText(err))
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		return nil, stateDirError("local state directory %s is a symbolic link; refusing it", dir)
	}
	if !lfi.IsDir() {
		return nil, stateDirError("local state directory %s is not a directory", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, stateDirErrorCause(err, "could not open local state directory %s: %s", dir, hold.OSErrorText(err))
	}
	st.root = root
	if err := st.check(lfi); err != nil {
		_ = st.Close()
		var ue *hold.UsageError
		if !errors.As(err, &ue) {
			err = stateDirErrorCause(err, "could not open local state directory %s: %s", dir, hold.OSErrorText(err))
		}
		return nil, err
	}
	return st, nil
}

// check judges the opened directory, which must be the one lfi describes,
// and prepares its subdirectories.
func (st *Store) check(lfi fs.FileInfo) error {
	dir := st.dir
	self, err := st.root.Open(".")
	if err != nil {
		return stateDirErrorCause(err, "could not open local state directory %s: %s", dir, hold.OSErrorText(err))
	}
	st.self = self
	fi, err := self.Stat()
	if err != nil {
		return stateDirErrorCause(err, "could not inspect local state directory %s: %s", dir, hold.OSErrorText(err))
	}
	// The checks below must judge the directory we will use, not whatever
	// the path named a moment ago.
	if !os.SameFile(fi, lfi) {
		return stateDirError("local state directory %s changed while it was being opened", dir)
	}
	if err := checkStateDirOwnership(self, dir, st.shared); err != nil {
		return err
	}
	if err := checkReliableLocks(self, dir); err != nil {
		return err
	}
	st.entries = entryRulesFor(fi, st.shared)
	st.fileMode, st.dirMode = 0o600, 0o700
	if st.entries.groupShared() {
		st.fileMode, st.dirMode = 0o660, 0o770
	}
	for _, sub := range []string{electionsDir, locksDir} {
		if err := st.ensureSubdir(sub); err != nil {
			return err
		}
	}
	return st.checkExisting(termFile)
}

const (
	electionsDir = "elections"
	locksDir     = "locks"
	termFile     = "term"
)

func (s *Store) ensureSubdir(sub string) error {
	if err := s.root.Mkdir(sub, s.dirMode); err == nil {
		// Mkdir honours the umask; a shared directory needs the group bits.
		if err := chmodCreatedDir(s.root, sub, s.dirMode); err != nil {
			return stateDirErrorCause(err, "could not set permissions of %s: %s", s.join(sub), hold.OSErrorText(err))
		}
		if err := platform.SyncDir(s.self); err != nil {
			return stateDirErrorCause(err, "could not sync %s: %s", s.dir, hold.OSErrorText(err))
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return stateDirErrorCause(err, "could not create %s: %s", s.join(sub), hold.OSErrorText(err))
	}
	fi, err := s.root.Lstat(sub)
	if err != nil {
		return stateDirErrorCause(err, "could not inspect %s: %s", s.join(sub), hold.OSErrorText(err))
	}
	if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return stateDirError("%s in the local state directory is not a plain directory", s.join(sub))
	}
	return s.entries.check(s.join(sub), fi)
}

// checkExisting judges the entry rel if it exists (entryRules).
func (s *Store) checkExisting(rel string) error {
	fi, err := s.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return stateDirErrorCause(err, "could not inspect %s: %s", s.join(rel), hold.OSErrorText(err))
	}
	return s.entries.check(s.join(rel), fi)
}

// CheckName judges the existing files of kind/name by entryRules, so that a
// planted lock, holder record or interlock is refused (*UsageError, exit 64)
// before anything starts.
func (s *Store) CheckName(kind hold.Kind, name string) error {
	esc, err := escapeName(name)
	if err != nil {
		return err
	}
	return s.checkNameEntries(pathsFor(kind, esc))
}

func (s *Store) checkNameEntries(p paths) error {
	for _, rel := range []string{p.lock, p.record, p.interlock} {
		if err := s.checkExisting(rel); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the directory handles. Holds, status and watch must have
// finished.
func (s *Store) Close() error {
	var errs []error
	if s.self != nil {
		errs = append(errs, s.self.Close())
	}
	if s.root != nil {
		errs = append(errs, s.root.Close())
	}
	return errors.Join(errs...)
}

// Dir is the state directory's path.
func (s *Store) Dir() string { return s.dir }

// Server is the "server" field of events: "local" or the normalised file URL.
func (s *Store) Server() string { return s.server }

func (s *Store) join(rel string) string {
	return strings.TrimRight(s.dir, `/\`) + string(os.PathSeparator) + filepath.FromSlash(rel)
}

// ValidateName checks an election id or lock name for the local
// authority (the CLI calls it before starting a hold, status or watch):
// empty, ".", "..", a name with a "." or ".." path segment or a leading path
// separator, and names too long once escaped are refused (*UsageError, 64).
func ValidateName(name string) error {
	_, err := escapeName(name)
	return err
}

// escapeName maps a name to a file-name stem that cannot leave its
// directory: every byte outside [a-z0-9._-] is percent-encoded (upper-case
// hex), as is a leading '.'. Upper-case letters are encoded so that names
// differing only in case stay distinct on case-insensitive file systems
// (macOS, Windows), and a stem that Windows would take for a device (CON,
// NUL, COM1, …) gets its first byte encoded. Decoding the result gives the
// name back, so the mapping is injective.
func escapeName(name string) (string, error) {
	if name == "" {
		return "", usageError(errName, "name must not be empty")
	}
	if strings.ContainsRune(name, 0) {
		return "", usageError(errName, "name must not contain NUL")
	}
	if strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return "", usageError(errName, fmt.Sprintf("name %q would escape the local state directory", name))
	}
	for _, seg := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return "", usageError(errName, fmt.Sprintf("name %q would escape the local state directory", name))
		}
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		plain := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' && i > 0
		if plain {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	s := b.String()
	if stem, _, _ := strings.Cut(s, "."); windowsDeviceName(stem) {
		s = fmt.Sprintf("%%%02X", s[0]) + s[1:]
	}
	if len(s) > maxEscapedName {
		return "", usageError(errName, fmt.Sprintf("name is too long for the local authority (%d bytes once escaped; at most %d)", len(s), maxEscapedName))
	}
	return s, nil
}

func windowsDeviceName(stem string) bool {
	switch stem {
	case "con", "prn", "aux", "nul":
		return true
	}
	if len(stem) == 4 && (strings.HasPrefix(stem, "com") || strings.HasPrefix(stem, "lpt")) {
		return stem[3] >= '0' && stem[3] <= '9'
	}
	return false
}

func subdir(kind hold.Kind) string {
	if kind == hold.KindLock {
		return locksDir
	}
	return electionsDir
}

// paths are the root-relative paths of one name's files.
type paths struct{ lock, record, tmp, interlock string }

func pathsFor(kind hold.Kind, escaped string) paths {
	base := path.Join(subdir(kind), escaped)
	return paths{lock: base + ".lock", record: base + ".holder", tmp: base + ".holder.tmp", interlock: base + ".active"}
}

// OpenInterlock opens (creating it if needed) the name's interlock file.
// The room's lock passes to the next holder the instant the previous hold
// process dies, possibly while that holder's worker is still being torn
// down. octostore-supervisor closes that gap: it locks the interlock
// exclusively before it starts a protected worker and unlocks it only after
// the worker's whole tree is proven gone, so the next supervisor's worker
// cannot start before the previous one is contained.
func (s *Store) OpenInterlock(kind hold.Kind, name string) (*os.File, error) {
	escaped, err := escapeName(name)
	if err != nil {
		return nil, err
	}
	if err := s.ensureSubdir(subdir(kind)); err != nil {
		return nil, err
	}
	f, err := s.createOrOpen(pathsFor(kind, escaped).interlock, os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("open the interlock file of %s %q: %w", kind, name, err)
	}
	return f, nil
}

// createOrOpen opens rel with flag, creating it (O_EXCL, then with the
// store's mode despite the umask) when it does not exist yet. A file deleted
// between the create that found it and the open of it (someone removed a lock
// file; on Windows, the last handle of a file whose deletion was deferred
// closed) is created again rather than reported: a few times, since a
// deletion of every attempt's file is no race but an attack, and an error.
func (s *Store) createOrOpen(rel string, flag int) (*os.File, error) {
	for try := 1; ; try++ {
		f, err := s.createNew(rel, flag)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
		f, err = s.openExisting(rel, flag)
		if !errors.Is(err, fs.ErrNotExist) || try == createTries {
			return f, err
		}
	}
}

// createTries bounds createOrOpen's attempts.
const createTries = 3

// createNew creates rel with flag, failing with fs.ErrExist if it exists.
func (s *Store) createNew(rel string, flag int) (*os.File, error) {
	f, err := s.root.OpenFile(rel, flag|os.O_CREATE|os.O_EXCL, s.fileMode)
	if err != nil {
		return nil, err
	}
	if err := chmodCreated(f, s.fileMode); err != nil {
		f.Close()
		return nil, err
	}
	if err := platform.SyncDir(s.self); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openExisting opens rel and judges what it opened (entryRules).
func (s *Store) openExisting(rel string, flag int) (*os.File, error) {
	f, err := s.root.OpenFile(rel, flag, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = s.entries.check(s.join(rel), fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// termWidth is the fixed width of the counter, so every update overwrites
// the whole value in place with one small write.
const termWidth = 20

// bumpTerm increments the fencing counter under its own exclusive lock and
// fsyncs it, so terms strictly increase across holders, elections and locks
// alike, and restarts. The lock is polled (not waited for) so ctx can end
// the attempt. A counter that is not exactly what we write is corrupt: we
// fail rather than restart from zero. issued is the name's lock file, where
// every holder copies its term: the counter must not be below it nor below
// any holder record's term (errTermRewound), since every term recorded was
// taken from the counter first.
func (s *Store) bumpTerm(ctx context.Context, issued *os.File, issuedRel string) (uint64, error) {
	f, err := s.createOrOpen(termFile, os.O_RDWR)
	if err != nil {
		return 0, fmt.Errorf("open term counter %s: %w", s.join(termFile), err)
	}
	defer f.Close()
	for {
		ok, err := platform.TryLockFile(f, true)
		if err != nil {
			return 0, fmt.Errorf("lock term counter %s: %w", s.join(termFile), err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return 0, errors.New("gave up waiting for the term counter lock")
		case <-time.After(5 * time.Millisecond):
		}
	}
	cur, err := readTerm(f)
	if err != nil {
		return 0, fmt.Errorf("term counter %s: %w", s.join(termFile), err)
	}
	if err := s.checkNotRewound(cur, issued, issuedRel); err != nil {
		return 0, err
	}
	if cur == math.MaxUint64 {
		return 0, fmt.Errorf("term counter %s is exhausted", s.join(termFile))
	}
	next := cur + 1
	if err := writeTerm(f, next); err != nil {
		return 0, fmt.Errorf("write term counter %s: %w", s.join(termFile), err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("sync term counter %s: %w", s.join(termFile), err)
	}
	// Closing f releases the lock.
	return next, nil
}

// checkNotRewound compares the counter with the terms the store recorded as
// issued: the name's lock file and every holder record.
func (s *Store) checkNotRewound(cur uint64, issued *os.File, issuedRel string) error {
	hi, where := uint64(0), ""
	last, err := readTerm(issued)
	if err != nil {
		return fmt.Errorf("last issued term in %s: %w", s.join(issuedRel), err)
	}
	if last > hi {
		hi, where = last, s.join(issuedRel)
	}
	for _, sub := range []string{electionsDir, locksDir} {
		names, err := fs.Glob(s.root.FS(), sub+"/*.holder")
		if err != nil {
			return err
		}
		for _, rel := range names {
			rec, err := s.readRecord(rel)
			if errors.Is(err, fs.ErrNotExist) {
				continue // released meanwhile
			}
			if err != nil {
				return err
			}
			if rec.Term > hi {
				hi, where = rec.Term, s.join(rel)
			}
		}
	}
	if hi > cur {
		return fmt.Errorf("%w: term counter %s reads %d, but term %d was already issued (recorded in %s); refusing to hand out a stale fencing term",
			errTermRewound, s.join(termFile), cur, hi, where)
	}
	return nil
}

// writeTerm overwrites the counter format at the start of f.
func writeTerm(f *os.File, v uint64) error {
	_, err := f.WriteAt([]byte(fmt.Sprintf("%0*d\n", termWidth, v)), 0)
	return err
}

func readTerm(f *os.File) (uint64, error) {
	buf := make([]byte, termWidth+2)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	if n != termWidth+1 || buf[termWidth] != '\n' {
		return 0, errors.New("is corrupt; refusing to reuse fencing terms")
	}
	v, err := strconv.ParseUint(string(buf[:termWidth]), 10, 64)
	if err != nil {
		return 0, errors.New("is corrupt; refusing to reuse fencing terms")
	}
	return v, nil
}

// peekTerm reads the counter without its lock, for status displays only.
func (s *Store) peekTerm() (uint64, bool) {
	f, err := s.root.Open(termFile)
	if err != nil {
		return 0, errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	v, err := readTerm(f)
	return v, err == nil
}

// holderRecord describes the holder of one name, for status and watch, and
// lets a holder notice that someone else now claims the name.
type holderRecord struct {
	Kind        string  `json:"kind"`
	Name        string  `json:"name"`
	CandidateID *string `json:"candidate_id,omitempty"`
	Term        uint64  `json:"term"`
	PID         int     `json:"pid"`
	// Start is the holding process's start time (procid.ID): with PID it tells
	// the holder from a later process that reuses its pid. Records written
	// before it was kept lack it, and then the pid alone is judged.
	Start      uint64    `json:"start,omitempty"`
	Holder     string    `json:"holder_id"` // random per acquisition: tells two holds of one process apart
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// holderProcess names the process that wrote the record.
func (rec holderRecord) holderProcess() procid.ID { return procid.ID{Pid: rec.PID, Start: rec.Start} }

func (s *Store) readRecord(rel string) (holderRecord, error) {
	f, err := s.openExisting(rel, os.O_RDONLY)
	if err != nil {
		return holderRecord{}, err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	f.Close()
	if err != nil {
		return holderRecord{}, err
	}
	var rec holderRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return holderRecord{}, fmt.Errorf("holder record %s is malformed: %w", s.join(rel), err)
	}
	return rec, nil
}

// writeRecord replaces the record atomically (write, then rename), so a
// reader sees the old record or the new one, never a mixture. Only the
// current lock holder writes it.
func (s *Store) writeRecord(p paths, rec holderRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.writeReplace(p.tmp, p.record, b, false)
}

// writeReplace writes b to tmp and renames it over rel, so a reader sees the
// old content or the new, never a mixture; durable also fsyncs the file and
// the directory.
func (s *Store) writeReplace(tmp, rel string, b []byte, durable bool) error {
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, s.fileMode)
	if err != nil {
		return err
	}
	err = chmodCreated(f, s.fileMode)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.replaceFile(tmp, rel)
	}
	if err == nil && durable {
		err = platform.SyncDir(s.self)
	}
	return err
}

func newHolderID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// CreateElection makes a new room (hold.Authority): a random id
// (hold.NewElectionID) and its lock file. Every candidate must then be given this same
// id. The paths are the server's, so --json prints the same shape.
func (s *Store) CreateElection(context.Context) (hold.ElectionCreated, error) {
	id, err := s.createElection()
	if err != nil {
		return hold.ElectionCreated{}, err
	}
	p := "/elections/" + hold.EncodeSegment(id)
	return hold.ElectionCreated{ElectionID: id, CampaignPath: p + "/campaign", StatusPath: p, WatchPath: p + "/watch"}, nil
}

func (s *Store) createElection() (string, error) {
	for {
		id, err := hold.NewElectionID()
		if err != nil {
			return "", err
		}
		esc, err := escapeName(id)
		if err != nil {
			return "", err
		}
		f, err := s.root.OpenFile(pathsFor(hold.KindElection, esc).lock, os.O_RDONLY|os.O_CREATE|os.O_EXCL, s.fileMode)
		if errors.Is(err, fs.ErrExist) {
			continue // astronomically unlikely; draw again
		}
		if err != nil {
			return "", fmt.Errorf("create election in %s: %w", s.dir, err)
		}
		err = chmodCreated(f, s.fileMode)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = platform.SyncDir(s.self)
		}
		if err != nil {
			return "", fmt.Errorf("create election in %s: %w", s.dir, err)
		}
		return id, nil
	}
}
