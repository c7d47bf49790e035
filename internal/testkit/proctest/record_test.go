package proctest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadPidfile(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "pids")

	recs, err := ReadPidfile(pf)
	require.NoError(t, err, "a pidfile not written yet holds no records")
	require.Empty(t, recs)

	require.NoError(t, os.WriteFile(pf, []byte("12 345 worker\n13 346\n14 347 daemon extra\n"), 0o644))
	recs, err = ReadPidfile(pf)
	require.NoError(t, err)
	assert.Equal(t, []Record{{12, 345, "worker"}, {13, 346, ""}, {14, 347, "daemon"}}, recs)

	_, err = ReadPidfile(dir)
	require.Error(t, err, "a pidfile that cannot be read is an error")
}

func TestReadPidfileMalformed(t *testing.T) {
	for _, bad := range []string{"12", "x 345", "0 345", "-1 345", "12 abc", "12 -3", ""} {
		t.Run(bad, func(t *testing.T) {
			pf := filepath.Join(t.TempDir(), "pids")
			require.NoError(t, os.WriteFile(pf, []byte("12 345 worker\n"+bad+"\n13 346\n"), 0o644))
			recs, err := ReadPidfile(pf)
			require.ErrorContains(t, err, "malformed line 2")
			assert.Equal(t, []Record{{12, 345, "worker"}, {13, 346, ""}}, recs, "the well-formed lines are still returned")
		})
	}
}

func TestRecordString(t *testing.T) {
	assert.Equal(t, "pid 12 (worker, start 345)", Record{12, 345, "worker"}.String())
	assert.Equal(t, "pid 13 (start 346)", Record{13, 346, ""}.String())
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				_, _ = b.Write([]byte("line\n"))
			}
		}()
	}
	wg.Wait()
	assert.Len(t, b.Lines(), 800)
	_, _ = b.Write([]byte("partial"))
	assert.Equal(t, "partial", b.Lines()[800], "a last line without its newline is included")
	assert.Len(t, b.String(), 800*5+len("partial"))
}
