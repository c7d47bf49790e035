package survivor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/octostore-supervisor/supervisor/platform/procid"
)

// Dir is the private state directory a record lives in. The local
// authority's store is one (package hold/local); a directory handed to the
// lean supervisor across its exec is the other (package contain).
type Dir interface {
	// OpenExisting opens the entry rel read-only and judges what it opened;
	// fs.ErrNotExist when there is none.
	OpenExisting(rel string) (*os.File, error)
	// WriteReplace writes b to tmp and renames it over rel, durably.
	WriteReplace(tmp, rel string, b []byte) error
	// Remove deletes the entry rel.
	Remove(rel string) error
	// Join names rel for messages.
	Join(rel string) string
	// Handle is the directory itself, open, and its path: what another
	// image of the supervisor needs to use the same directory after an exec.
	Handle() (*os.File, string)
	// Close releases the directory.
	Close() error
}

// Key names whose record it is.
type Key struct {
	Authority string `json:"authority"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

// file is the record's content.
type file struct {
	Key
	Survivors []procid.ID `json:"survivors"`
}

// maxSize bounds what a read believes: a record names processes, not megabytes.
const maxSize = 1 << 20

// Record is one name's record in a Dir.
type Record struct {
	dir Dir
	rel string
	key Key
}

// New is the record rel of dir, for key.
func New(dir Dir, rel string, key Key) *Record { return &Record{dir: dir, rel: rel, key: key} }

// Path is the record's file, for messages.
func (r *Record) Path() string { return r.dir.Join(r.rel) }

// Handover is what another image of the supervisor needs to use this very
// record after an exec: the directory (open, its descriptor to be inherited),
// its path, and the record's place and key in it (New).
func (r *Record) Handover() (dir *os.File, dirPath, rel string, key Key) {
	dir, dirPath = r.dir.Handle()
	return dir, dirPath, r.rel, r.key
}

// Close releases the record's directory.
func (r *Record) Close() error { return r.dir.Close() }

// Survivors lists the recorded processes (none when there is no record).
func (r *Record) Survivors() ([]procid.ID, error) {
	f, err := r.dir.OpenExisting(r.rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("survivor record %s: %w", r.Path(), err)
	}
	defer f.Close()
	var rec file
	if err := json.NewDecoder(io.LimitReader(f, maxSize)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("survivor record %s is malformed (remove it once the processes it named are gone): %w", r.Path(), err)
	}
	return rec.Survivors, nil
}

// Add records ids beside those already recorded, replacing the file
// atomically and durably.
func (r *Record) Add(ids []procid.ID) error {
	old, err := r.Survivors()
	if err != nil {
		return err
	}
	b, err := json.Marshal(file{Key: r.key, Survivors: slices.Concat(old, ids)})
	if err != nil {
		return err
	}
	if err := r.dir.WriteReplace(r.rel+".tmp", r.rel, b); err != nil {
		return fmt.Errorf("write %s: %w", r.Path(), err)
	}
	return nil
}

// Remove deletes the record (once nothing it names is alive).
func (r *Record) Remove() error {
	if err := r.dir.Remove(r.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", r.Path(), err)
	}
	return nil
}
