package proctest

import (
	"bufio"
	"bytes"
	"strings"
	"sync"
)

// SyncBuffer is a bytes.Buffer that is safe for concurrent use: the sink for a
// child's stdout or stderr that os/exec fills from its own goroutine while the
// test reads it. The zero value is ready to use.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns everything written so far split into lines, without the
// newlines; a last line still missing its newline is included.
func (b *SyncBuffer) Lines() []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
