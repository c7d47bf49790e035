//go:build unix

package contain

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// relayDrainBound is how long the guardian's end waits for relayed output
// still in its pipes once the worker's tree is proven gone (nothing can
// write any more; the rest is at most a pipe's buffer).
const relayDrainBound = time.Second

// outputRelay copies a --worker-user worker's output into where it goes.
//
// Such a worker does not get our own descriptors as its stdout and stderr:
// with the supervisor's stderr in hand, a worker of another user could
// truncate the log file it is (ftruncate needs no permission on the file,
// only the descriptor), reopen a pipe or terminal through /proc/self/fd/2,
// change the terminal's settings or read what others write to it. It gets
// pipes of its own instead, which the guardian (root's, out of its reach)
// copies into ours; on a terminal, with its control characters shown in
// caret notation (caretWriter), so that it sends the terminal no escape
// sequence either. A worker of our own user gets our descriptors as before:
// it could open what they name anyway.
type outputRelay struct {
	writers []*os.File      // the pipes' write ends, until handed to the worker's shim
	done    []chan struct{} // closed when a pipe's copy has reached its end
}

// relayWorkerOutput returns the worker's stdout and stderr: out and errf
// themselves, or under --worker-user the write ends of pipes relayed into
// them (one pipe when both are the same file, which keeps the worker's
// writes to both in order).
func relayWorkerOutput(iso *Isolation, out, errf *os.File) (wout, werr *os.File, r *outputRelay, err error) {
	r = &outputRelay{}
	if iso == nil || iso.User == nil {
		return out, errf, r, nil
	}
	if wout, err = r.pipeTo(out); err != nil {
		return nil, nil, r, err
	}
	oi, oerr := out.Stat()
	ei, eerr := errf.Stat()
	if oerr == nil && eerr == nil && os.SameFile(oi, ei) {
		return wout, wout, r, nil
	}
	if werr, err = r.pipeTo(errf); err != nil {
		r.closeWriters()
		return nil, nil, r, err
	}
	return wout, werr, r, nil
}

// pipeTo makes a pipe whose read end is copied into dst until its end,
// through a descriptor of its own: the caller may close dst.
func (r *outputRelay) pipeTo(to *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(to.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup %s: %w", to.Name(), err)
	}
	dst := os.NewFile(uintptr(fd), to.Name())
	pr, pw, err := os.Pipe()
	if err != nil {
		dst.Close()
		return nil, err
	}
	done := make(chan struct{})
	r.writers, r.done = append(r.writers, pw), append(r.done, done)
	go func() {
		defer close(done)
		defer dst.Close()
		defer pr.Close()
		var w io.Writer = dst
		caret := platform.IsTerminal(dst)
		if caret {
			w = &caretWriter{w: dst}
		}
		if _, err := io.Copy(w, pr); err != nil {
			// Our output is gone (a closed pipe): the worker must not block
			// on a full one of its own.
			_, _ = io.Copy(io.Discard, pr)
		}
		if c, ok := w.(*caretWriter); ok {
			c.flush()
		}
	}()
	return pw, nil
}

// closeWriters closes our copies of the write ends, once the worker's shim
// has its own: the copies end when the worker's tree has ended.
func (r *outputRelay) closeWriters() {
	if r == nil {
		return
	}
	for _, w := range r.writers {
		w.Close()
	}
	r.writers = nil
}

// drain waits, at most limit in all, until every copy has reached its end.
func (r *outputRelay) drain(limit time.Duration) {
	if r == nil {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	for _, d := range r.done {
		select {
		case <-d:
		case <-t.C:
			return
		}
	}
}

// caretWriter writes to a terminal what a worker wrote, with every control
// character but newline and tab in caret notation, as cat -v shows them: ESC
// as ^[, DEL as ^?, and a C1 control (U+0080-U+009F, which terminals also
// obey) as M-^[ and so on. Printable text, UTF-8 included, passes as it is.
type caretWriter struct {
	w   io.Writer
	c2  bool // the last byte was 0xC2, which may begin a C1 control
	buf []byte
}

func (c *caretWriter) Write(p []byte) (int, error) {
	c.buf = c.buf[:0]
	for _, b := range p {
		if c.c2 {
			c.c2 = false
			if b >= 0x80 && b <= 0x9f {
				c.buf = append(c.buf, 'M', '-', '^', b-0x80+0x40)
				continue
			}
			c.buf = append(c.buf, 0xc2)
		}
		switch {
		case b == 0xc2:
			c.c2 = true
		case b == '\n' || b == '\t':
			c.buf = append(c.buf, b)
		case b < 0x20:
			c.buf = append(c.buf, '^', b+0x40)
		case b == 0x7f:
			c.buf = append(c.buf, '^', '?')
		default:
			c.buf = append(c.buf, b)
		}
	}
	if _, err := c.w.Write(c.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes a 0xC2 the stream ended on.
func (c *caretWriter) flush() {
	if c.c2 {
		c.c2 = false
		_, _ = c.w.Write([]byte{0xc2})
	}
}
