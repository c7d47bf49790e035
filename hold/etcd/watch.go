package etcd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/hold"
)

// never is a deadline no wait reaches: a watch has no authority budget.
// resyncInterval bounds how long one watch stream is trusted without an
// event: then the status is read again (printed only if it changed) and a new
// watch starts from that read. A stream the client resumed after a compaction
// was seen to stay connected and silent for good on etcd 3.4.23; re-reading
// bounds how late such a watch can report a change, at the cost of one
// linearizable read per interval.
const resyncInterval = 5 * time.Second

// Watch prints the status now and after every change until a signal or ctx
// ends it: Watch(prefix, WithPrefix, WithRev(h+1)) from the revision h of the
// last read, re-reading the status on every event. A watch that ends (a
// compacted revision, a lost etcd leader) is followed by a fresh read and a
// new watch from that read; never from revision 0.
func (a *Authority) Watch(ctx context.Context, spec hold.WatchSpec, signals <-chan os.Signal) int {
	w := &watchRun{a: a, spec: spec, wt: &hold.Waiter{Clock: hold.SystemClock{}, Signals: signals, Ctx: ctx}}
	for {
		if code, done := w.checkVersion(); done {
			return code
		}
		if code, done := w.readAndFollow(); done {
			return code
		}
		if o, _ := w.wt.Sleep(w.after(hold.MinRetryDelay), true); o == hold.Signalled {
			return w.signalExit()
		}
	}
}

type watchRun struct {
	a    *Authority
	spec hold.WatchSpec
	wt   *hold.Waiter
	seq  uint64
	last []byte // the last printed snapshot
}

// checkVersion: below the floor ends the watch (64); a cluster that does
// not answer yet is retried like any failed read.
func (w *watchRun) checkVersion() (int, bool) {
	ans, err := call(w.wt, w.after(readTimeout), true, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.a.checkVersion(ctx, w.spec.Diag)
	})
	var usage *hold.UsageError
	switch {
	case err != nil:
		w.a.diagf(w.spec.Diag, "%v", err)
		return hold.ExitSoftware, true
	case ans.o == hold.Signalled:
		return w.signalExit(), true
	case errors.As(ans.err, &usage):
		w.a.diagf(w.spec.Diag, "%v", usage)
		return hold.ExitUsage, true
	}
	return 0, false
}

func (w *watchRun) signalExit() int { return exitFor(w.wt.Signal) }

func (w *watchRun) after(d time.Duration) hold.Deadline {
	now, err := hold.Now(w.wt.Clock)
	if err != nil {
		return hold.Deadline{} // already reached: the caller retries or ends
	}
	dl, _ := now.After(d)
	return dl
}

// readAndFollow reads the status, prints it when it changed, and follows the
// name's prefix until the watch ends (false: read again) or a signal.
func (w *watchRun) readAndFollow() (int, bool) {
	for {
		st, rev, ok := w.read()
		if !ok {
			return 0, false
		}
		w.print(st)
		o, changed, err := hold.Await(w.wt, w.after(resyncInterval), true, nil, func(ctx context.Context) bool {
			return w.nextChange(ctx, rev)
		})
		switch {
		case err != nil:
			w.a.diagf(w.spec.Diag, "%v", err)
			return hold.ExitSoftware, true
		case o == hold.Signalled:
			return w.signalExit(), true
		case o == hold.DeadlineReached:
			continue // a quiet stream is re-read, not trusted (resyncInterval)
		case !changed:
			return 0, false
		}
	}
}

func (w *watchRun) read() (status, int64, bool) {
	var st status
	var rev int64
	ans, err := call(w.wt, w.after(readTimeout), true, func(ctx context.Context) (struct{}, error) {
		var err error
		st, rev, err = w.a.readStatus(ctx, w.spec.Kind, w.spec.Name)
		return struct{}{}, err
	})
	if err == nil && ans.o == hold.Done && ans.err != nil {
		w.a.diagf(w.spec.Diag, "%v; retrying", ans.err)
	}
	return st, rev, err == nil && ans.o == hold.Done && ans.err == nil
}

// nextChange waits for an event under the name's prefix after rev: true on
// a change, false when the watch ended without one (compaction, no leader).
func (w *watchRun) nextChange(ctx context.Context, rev int64) bool {
	dir := w.a.t.namePrefix(w.spec.Kind, w.spec.Name)
	for resp := range w.a.client.Watch(clientv3.WithRequireLeader(ctx), dir, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if resp.Err() != nil {
			w.a.diagf(w.spec.Diag, "etcd watch of %s ended: %v; reading again", dir, resp.Err())
			return false
		}
		if len(resp.Events) > 0 {
			return true
		}
	}
	return false
}

func (w *watchRun) print(st status) {
	snap := st.snapshot()
	if bytes.Equal(snap, w.last) {
		return
	}
	w.last = snap
	w.seq++
	if !w.spec.JSON {
		_, _ = w.spec.Out.Write([]byte(w.spec.Kind.String() + " " + hold.TerminalSafe(w.spec.Name) + " · " + st.word() + " · authority " + hold.TerminalSafe(w.a.Server()) + "\n"))
		return
	}
	_, _ = w.spec.Out.Write(hold.SnapshotLine(w.seq, w.spec.Kind, w.spec.Name, w.a.Server(), snap, time.Now()))
}
