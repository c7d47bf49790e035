//go:build unix

package contain

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// workerUsersSub holds one lock file per worker uid, below rootRunDir.
const workerUsersSub = "worker-users"

// errWorkerUserTaken is a worker user another live run of this host uses.
type errWorkerUserTaken struct{ msg string }

func (e errWorkerUserTaken) Error() string { return e.msg }

// claimWorkerUser takes this run's hold on its worker's user, before anything
// of the run starts, and keeps it in u.claim: an exclusive flock of
// worker-users/<uid>, or with Share a shared one. Two workers of one user
// can read each other's environment, trace each other and create each
// other's files; a run that did not agree to that is refused another's user
// (errWorkerUserTaken, exit 64), and one that did is refused a user an
// unwilling run holds. The guardian inherits the lock (Isolation.kept), so
// it is let go only when the worker is proven gone, even if the supervisor
// dies first. Nothing to claim without a worker user.
func claimWorkerUser(u *WorkerUser) error {
	if u == nil {
		return nil
	}
	dir, path, err := rootRunDir(workerUsersSub, 0o700)
	if err != nil {
		return fmt.Errorf("claim the worker user %s: %w", u.Name, err)
	}
	defer dir.Close()
	name := strconv.FormatUint(uint64(u.Uid), 10)
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("claim the worker user %s: open %s/%s: %w", u.Name, path, name, err)
	}
	f := os.NewFile(uintptr(fd), path+"/"+name)
	ok, err := tryLockAWhile(f, !u.Share)
	if err != nil || !ok {
		f.Close()
	}
	switch {
	case err != nil:
		return fmt.Errorf("claim the worker user %s: lock %s: %w", u.Name, f.Name(), err)
	case !ok && u.Share:
		return errWorkerUserTaken{fmt.Sprintf("--worker-user %s: another live run on this host runs its worker as uid %d without --share-worker-user; its worker and ours could read, trace and write each other. Give that user to one run at a time, or --share-worker-user to every run that shares it", u.Name, u.Uid)}
	case !ok:
		return errWorkerUserTaken{fmt.Sprintf("--worker-user %s: another live run on this host runs its worker as uid %d; two workers of one user can read each other's environment, trace each other and create each other's files. Give each run a user of its own, or --share-worker-user to every run that shares it", u.Name, u.Uid)}
	}
	u.claim = f
	return nil
}

// claimGrace is how long a claim waits for a run that just ended: its
// guardian lets go of the user as it exits, a moment after its supervisor,
// and a CI job's next step started at once must not be refused for that.
const claimGrace = 2 * time.Second

// tryLockAWhile is platform.TryLockFile, tried again for claimGrace.
func tryLockAWhile(f *os.File, exclusive bool) (bool, error) {
	deadline := time.Now().Add(claimGrace)
	for {
		ok, err := platform.TryLockFile(f, exclusive)
		if ok || err != nil || time.Now().After(deadline) {
			return ok, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kept is what the guardian keeps open for the run's whole life beside the
// interlock: the claim on the worker's user.
func (iso Isolation) kept() []*os.File {
	if iso.User == nil || iso.User.claim == nil {
		return nil
	}
	return []*os.File{iso.User.claim}
}

// release lets go of this process's copy of the claim (the guardian's goes
// when it exits).
func (iso Isolation) release() {
	if iso.User != nil && iso.User.claim != nil {
		iso.User.claim.Close()
		iso.User.claim = nil
	}
}
