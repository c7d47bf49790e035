package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// The file-system proofs a hold rests on: taking the name's lock, checking
// that the locked file is still the one at the path, and releasing it.

type acquireState int

const (
	acquireBusy acquireState = iota
	acquireDeferred
	acquireOK
)

// tryAcquire takes the name's lock without waiting. It returns acquireBusy
// when another process holds it, and acquireDeferred when it got the lock but
// the record names a previous holder that is still alive and whose lease has
// not expired: then the lock file was deleted or replaced under that holder,
// which keeps believing it leads until its next renewal, so we must not lead
// before its lease is over. (A holder that died is dead by procid's test — a
// zombie not yet reaped by a slow PID 1, or a pid now reused by another
// process, included: immediate hand-over.)
func (r *run) tryAcquire() (*os.File, acquireState, error) {
	for range 3 {
		// Read-write: the holder copies its term into the lock file.
		f, err := r.store.createOrOpen(r.paths.lock, os.O_RDWR)
		if err != nil {
			return nil, acquireBusy, fmt.Errorf("open %s: %w", r.store.join(r.paths.lock), err)
		}
		ok, err := platform.TryLockFile(f, true)
		if err != nil || !ok {
			f.Close()
			if err != nil {
				return nil, acquireBusy, fmt.Errorf("lock %s: %w", r.store.join(r.paths.lock), err)
			}
			return nil, acquireBusy, nil
		}
		same, err := r.stillAtPath(f)
		if err != nil {
			f.Close()
			return nil, acquireBusy, err
		}
		if !same {
			// Deleted or replaced between our open and our lock: the file we
			// locked guards nothing any more. Take the one now at the path.
			f.Close()
			continue
		}
		rec, err := r.store.readRecord(r.paths.record)
		if err == nil && rec.Holder != r.holder && rec.holderProcess().Alive() && rec.ExpiresAt.After(r.spec.Clock.Wall()) {
			f.Close()
			return nil, acquireDeferred, nil
		}
		return f, acquireOK, nil
	}
	return nil, acquireBusy, nil
}

// stillAtPath reports whether f, which we locked, is still the file at the
// lock path: linked, and the same file (device and inode, or volume serial
// and file index on Windows) as a fresh lstat of the path.
func (r *run) stillAtPath(f *os.File) (bool, error) {
	links, err := fileLinks(f)
	if err != nil {
		return false, fmt.Errorf("inspect locked %s: %w", r.store.join(r.paths.lock), err)
	}
	if links == 0 {
		return false, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("inspect locked %s: %w", r.store.join(r.paths.lock), err)
	}
	pfi, err := r.store.root.Lstat(r.paths.lock)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inspect %s: %w", r.store.join(r.paths.lock), err)
	}
	return os.SameFile(fi, pfi), nil
}

// prove re-establishes ownership at a renewal (and before a release): the
// locked file is still the one at the path and the holder record is still
// ours. A *lostError says which proof failed; any other error is a failure to
// check (retried until the safety deadline).
func (r *run) prove(f *os.File, term uint64) error {
	same, err := r.stillAtPath(f)
	if err != nil {
		return err
	}
	if !same {
		if _, err := r.store.root.Lstat(r.paths.lock); errors.Is(err, fs.ErrNotExist) {
			return &lostError{reason: reasonLockGone, what: "lock file " + r.store.join(r.paths.lock) + " was deleted"}
		}
		return &lostError{reason: reasonLockGone, what: "lock file " + r.store.join(r.paths.lock) + " was replaced"}
	}
	rec, err := r.store.readRecord(r.paths.record)
	if errors.Is(err, fs.ErrNotExist) {
		return &lostError{reason: reasonLockGone, what: "holder record " + r.store.join(r.paths.record) + " was deleted"}
	}
	if err != nil {
		return err
	}
	if rec.Holder != r.holder || rec.Term != term {
		return &lostError{reason: r.lostToOther, what: "holder record " + r.store.join(r.paths.record) + " names another holder"}
	}
	return nil
}

type lostError struct{ reason, what string }

func (e *lostError) Error() string { return e.what }
func (e *lostError) Unwrap() error { return errLost }

func (r *run) record(term uint64, acquired, expires time.Time) holderRecord {
	return holderRecord{
		Kind: r.spec.Kind.String(), Name: r.spec.Name, CandidateID: r.candidate, Term: term,
		PID: r.self.Pid, Start: r.self.Start, Holder: r.holder, AcquiredAt: acquired.UTC(), ExpiresAt: expires.UTC(),
	}
}

// releaseFile removes our record (only while we still hold the lock, so it
// cannot be a successor's) and then drops the lock.
func (r *run) releaseFile(f *os.File, term uint64) error {
	defer f.Close()
	if err := r.prove(f, term); err != nil {
		return err
	}
	if err := r.store.removeFile(r.paths.record); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", r.store.join(r.paths.record), err)
	}
	return platform.UnlockFile(f)
}
