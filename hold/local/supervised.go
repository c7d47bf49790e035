package local

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path"
	"path/filepath"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/platform/survivor"
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

// Identity is the local authority's identity for HostKey: the file URL of
// the real path of its directory (symbolic links resolved), the same for
// "local" and for every file:/// that names that directory, however spelled.
func (s *Store) Identity() string {
	dir := s.dir
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return (&url.URL{Scheme: "file", Path: fileURLPath(dir)}).String()
}

// HostKey is the identity of authority (Identity, an HTTP server's
// canonical origin, an etcd cluster's identity, or ExplicitHoldAuthority),
// kind and name on this host: it keys the survivor record and the interlock
// file in the private state directory and names the interlock's host lock
// (contain.Config.HostKey). It holds nothing of the user or the state
// directory, so runs of one authority and name meet whoever runs them.
func HostKey(authority string, kind hold.Kind, name string) string {
	b, _ := json.Marshal([]string{authority, kind.String(), name})
	return string(b)
}

// supervisedStem hashes authority, kind and name into a file-name stem.
func supervisedStem(authority string, kind hold.Kind, name string) string {
	sum := sha256.Sum256([]byte(HostKey(authority, kind, name)))
	return hex.EncodeToString(sum[:])
}

// recordDir is the store as the directory of survivor records
// (survivor.Dir).
type recordDir struct{ s *Store }

func (d recordDir) OpenExisting(rel string) (*os.File, error) {
	return d.s.openExisting(rel, os.O_RDONLY)
}

func (d recordDir) WriteReplace(tmp, rel string, b []byte) error {
	return d.s.writeReplace(tmp, rel, b, true)
}

func (d recordDir) Remove(rel string) error    { return d.s.removeFile(rel) }
func (d recordDir) Join(rel string) string     { return d.s.join(rel) }
func (d recordDir) Handle() (*os.File, string) { return d.s.self, d.s.dir }
func (d recordDir) Close() error               { return d.s.Close() }

// OpenSupervised opens, in this private store, the survivor record of
// authority (an identity: Identity, a normalised server URL, or
// ExplicitHoldAuthority), kind and name, and — when withInterlock — its
// interlock file. Both live in a subdirectory private to the user (0700,
// judged like the store), where no worker running as another user can reach
// them. The record owns the store from then on: closing it closes the store.
func (s *Store) OpenSupervised(authority string, kind hold.Kind, name string, withInterlock bool) (*survivor.Record, *os.File, error) {
	if s.shared {
		return nil, nil, stateDirError("survivor records must live in a private state directory, not %s", s.dir)
	}
	if err := s.ensureSubdir(supervisedDir); err != nil {
		return nil, nil, err
	}
	stem := path.Join(supervisedDir, supervisedStem(authority, kind, name))
	rel := stem + ".survivors"
	rec := survivor.New(recordDir{s}, rel, survivor.Key{Authority: authority, Kind: kind.String(), Name: name})
	if err := s.checkExisting(rel); err != nil {
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
