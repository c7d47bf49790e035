//go:build unix

package contain

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// link is the supervisor's side of its socket to the guardian. Requests are made
// one at a time from the lifecycle goroutine; notifications arrive on notes.
type link struct {
	c       *conn
	pid     int
	replies chan msg
	notes   chan msg
	dead    chan struct{} // the socket closed: the guardian exited or was killed
	stopped chan struct{} // the guardian was stopped: it can enforce nothing
	mu      sync.Mutex    // held by the reaper around each wait
	reaped  chan struct{}
	lastID  uint64
}

func newLink() *link {
	return &link{replies: make(chan msg, 1), notes: make(chan msg, 16),
		dead: make(chan struct{}), stopped: make(chan struct{}), reaped: make(chan struct{})}
}

// watchStop closes l.stopped when the guardian pid, our child, is stopped. A
// stopped guardian keeps its socket open and answers nothing, and its deadline
// timer fires into a process that cannot act: the run must not wait for it.
func (l *link) watchStop(pid int) {
	go func() {
		if awaitStop(pid) {
			close(l.stopped)
		}
	}()
}

// attach starts delivering the guardian's messages.
func (l *link) attach(c *conn) {
	l.c = c
	go func() {
		for m := range c.pump() {
			if m.Reply {
				l.replies <- m
			} else {
				l.notes <- m
			}
		}
		close(l.dead)
	}()
}

// onReaped is the reaper callback (runs under l.mu).
func (l *link) onReapedLocked(pid int, _ unix.WaitStatus) {
	if pid == l.pid {
		close(l.reaped)
		l.pid = 0
	}
}

// call sends a request and waits for the reply carrying its ID. A reply to an
// earlier request that timed out is dropped, never taken for this one's.
func (l *link) call(m msg, timeout time.Duration) (msg, error) {
	l.lastID++
	m.ID = l.lastID
	if err := l.c.send(m); err != nil {
		return msg{}, fmt.Errorf("%w: %w", errGuardianLost, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case r := <-l.replies:
			if r.ID != m.ID {
				continue
			}
			return answered(r)
		case <-l.dead:
			// The pump hands a reply on before it sees the socket close, so
			// the guardian's last word (its reply to exit, sent as it ends)
			// is waiting here when both are ready at once.
			if r, ok := l.pending(m.ID); ok {
				return answered(r)
			}
			return msg{}, errGuardianLost
		case <-l.stopped:
			return msg{}, fmt.Errorf("%w: it was stopped", errGuardianLost)
		case <-t.C:
			return msg{}, fmt.Errorf("%w: no answer to %s within %v", errGuardianLost, m.Op, timeout)
		}
	}
}

// answered is a reply as call returns it, with the error it carries.
func answered(r msg) (msg, error) {
	if r.Err != "" {
		return r, errors.New(r.Err)
	}
	return r, nil
}

// pending returns the reply carrying id if it is already delivered.
func (l *link) pending(id uint64) (msg, bool) {
	for {
		select {
		case r := <-l.replies:
			if r.ID == id {
				return r, true
			}
		default:
			return msg{}, false
		}
	}
}

// kill ends a guardian that is frozen or misbehaving. It is our unreaped child
// while l.mu is held, so its pid cannot have been recycled.
func (l *link) kill() {
	l.mu.Lock()
	if l.pid != 0 {
		_ = unix.Kill(l.pid, syscall.SIGKILL)
	}
	l.mu.Unlock()
	select {
	case <-l.reaped:
	case <-time.After(2 * time.Second):
	}
}
