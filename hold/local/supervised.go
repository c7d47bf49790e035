package local

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"slices"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/internal/procid"
)

// What octostore-supervisor keeps on this host per authority and name, in
// the user's private state directory ("local", never a shared one):
//
//	supervised/<key>.active     the interlock of authorities that have no
//	                            state directory of their own (HTTP, explicit
//	                            holds); the local authority's is <name>.active
//	supervised/<key>.survivors  processes that outlived a failed containment
//
// <key> is a hash of the authority's identity, the kind and the name, so any
// name fits in a file name and two authorities never share a key.
const supervisedDir = "supervised"

// ExplicitHoldAuthority is the authority identity of an explicit
// "-- <hold command>": the supervisor cannot know which server that command
// asks, so every explicit hold of one kind and name on this host shares one
// interlock and one survivor record (it may over-serialize two authorities
// that use the same name; it never lets them overlap).
const ExplicitHoldAuthority = "explicit-hold"

// Identity is the local authority's identity for SupervisedKey: the file URL
// of its directory, the same for "local" and for file:/// naming that
// directory.
func (s *Store) Identity() string {
	return (&url.URL{Scheme: "file", Path: fileURLPath(s.dir)}).String()
}

// supervisedStem hashes authority, kind and name into a file-name stem.
func supervisedStem(authority string, kind hold.Kind, name string) string {
	b, _ := json.Marshal([]string{authority, kind.String(), name})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SurvivorRecord is one name's record of processes that outlived a failed
// containment on this host. A supervisor writes it before it lets go of the
// interlock; every later supervisor of that authority and name waits until
// the processes it names are gone (procid.ID.Alive), then removes it.
type SurvivorRecord struct {
	store *Store
	rel   string
	key   survivorFile
}

type survivorFile struct {
	Authority string      `json:"authority"`
	Kind      string      `json:"kind"`
	Name      string      `json:"name"`
	Survivors []procid.ID `json:"survivors"`
}

// OpenSupervised opens, in this private store, the survivor record of
// authority (an identity: Identity, a normalised server URL, or
// ExplicitHoldAuthority), kind and name, and — when withInterlock — its
// interlock file. Both live in a subdirectory private to the user (0700,
// judged like the store), where no worker running as another user can reach
// them. The record owns the store from then on: closing it closes the store.
func (s *Store) OpenSupervised(authority string, kind hold.Kind, name string, withInterlock bool) (*SurvivorRecord, *os.File, error) {
	if s.shared {
		return nil, nil, stateDirError("survivor records must live in a private state directory, not %s", s.dir)
	}
	if err := s.ensureSubdir(supervisedDir); err != nil {
		return nil, nil, err
	}
	stem := path.Join(supervisedDir, supervisedStem(authority, kind, name))
	rec := &SurvivorRecord{store: s, rel: stem + ".survivors", key: survivorFile{Authority: authority, Kind: kind.String(), Name: name}}
	if err := s.checkExisting(rec.rel); err != nil {
		return nil, nil, err
	}
	if !withInterlock {
		return rec, nil, nil
	}
	f, err := s.createOrOpen(stem+".active", os.O_RDWR)
	if err != nil {
		var ue *hold.UsageError
		if errors.As(err, &ue) {
			return nil, nil, err
		}
		return nil, nil, stateDirErrorCause(err, "could not open the interlock of %s %q in %s: %s", kind, name, s.dir, hold.OSErrorText(err))
	}
	return rec, f, nil
}

// Path is the record's file, for messages.
func (r *SurvivorRecord) Path() string { return r.store.join(r.rel) }

// Survivors lists the recorded processes (none when there is no record).
func (r *SurvivorRecord) Survivors() ([]procid.ID, error) {
	f, err := r.store.openExisting(r.rel, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("survivor record %s: %w", r.Path(), err)
	}
	defer f.Close()
	var rec survivorFile
	if err := json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("survivor record %s is malformed (remove it once the processes it named are gone): %w", r.Path(), err)
	}
	return rec.Survivors, nil
}

// Add records ids beside those already recorded, replacing the file
// atomically and durably.
func (r *SurvivorRecord) Add(ids []procid.ID) error {
	old, err := r.Survivors()
	if err != nil {
		return err
	}
	rec := r.key
	rec.Survivors = slices.Concat(old, ids)
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := r.store.writeReplace(r.rel+".tmp", r.rel, b, true); err != nil {
		return fmt.Errorf("write %s: %w", r.Path(), err)
	}
	return nil
}

// Remove deletes the record (once nothing it names is alive).
func (r *SurvivorRecord) Remove() error {
	if err := r.store.removeFile(r.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", r.Path(), err)
	}
	return nil
}

// Close closes the store the record lives in.
func (r *SurvivorRecord) Close() error { return r.store.Close() }
