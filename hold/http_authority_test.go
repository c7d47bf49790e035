package hold

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
)

// The HTTP authority through its interface: a room created, its status
// before and while held (the human lines in the format `election status`
// prints), an election hold run and released, a lock's status with its
// token, and a watch ended by its context.
func TestHTTPAuthority(t *testing.T) {
	t.Parallel()
	f, _ := startAuthority(t, lockTestToken)
	var a Authority = NewHTTPAuthority(newTestClient(t, f.url, true), lockTestToken)
	defer a.Close()
	server := a.Server()
	ctx := context.Background()

	room, err := a.CreateElection(ctx)
	require.NoError(t, err)
	rep, err := a.Status(ctx, KindElection, room.ElectionID)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%s · vacant · authority %s", room.ElectionID, server), rep.Human())

	out := newSink()
	signals, done, exited := make(chan os.Signal, 1), make(chan int, 1), make(chan struct{})
	t.Cleanup(func() { // no hold outlives the test, even a failed one
		select {
		case signals <- syscall.SIGINT:
		default:
		}
		<-exited
	})
	go func() {
		defer close(exited)
		done <- a.Hold(ctx, HoldSpec{Kind: KindElection, Name: room.ElectionID, Candidate: "agent-a", TTL: 5 * time.Second,
			ShutdownTimeout: 2 * time.Second, Jitter: FixedJitter(500), Out: out, Diag: &bytes.Buffer{}}, signals)
	}()
	var leader struct {
		Event     string `json:"event"`
		Term      uint64 `json:"term"`
		ExpiresAt string `json:"expires_at"`
	}
	require.NoError(t, json.Unmarshal(<-out.ch, &leader))
	require.Equal(t, events.Leader, leader.Event)
	rep, err = a.Status(ctx, KindElection, room.ElectionID)
	require.NoError(t, err)
	st := rep.(electionReport).st
	require.NotNil(t, st.Leader)
	require.Equal(t, fmt.Sprintf("%s · leader agent-a · term %d · expires %s · authority %s", room.ElectionID,
		leader.Term, RFC3339Offset(st.Leader.ExpiresAt), server), rep.Human())
	require.Equal(t, string(st.JSON()), string(rep.JSON()))
	signals <- syscall.SIGINT
	require.Equal(t, ExitSIGINT, <-done)

	rep, err = a.Status(ctx, KindLock, "repo/x")
	require.NoError(t, err)
	ls := rep.(lockReport).st
	require.Equal(t, fmt.Sprintf("repo/x · %s · term %d · authority %s", ls.Status, ls.FencingToken, server), rep.Human())
	require.Equal(t, string(ls.JSON(lockTestToken)), string(rep.JSON()))

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wout := newSink()
	wdone := make(chan int, 1)
	go func() {
		wdone <- a.Watch(wctx, WatchSpec{Kind: KindLock, Name: "repo/x", Out: wout, Diag: &bytes.Buffer{}}, nil)
	}()
	require.Equal(t, fmt.Sprintf("lock repo/x · %s · authority %s", ls.Status, server), string(<-wout.ch))
	cancel()
	require.Equal(t, ExitSIGTERM, <-wdone)
}
