package etcdtest

import (
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The proxy's three modes against a plain echo server: Pass forwards,
// Blackhole holds data both ways until Pass delivers it, Reset ends the
// connection with an RST.
func TestProxyModes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	p := NewProxy(t, ln.Addr().String())
	conn, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	echo := func(msg string, within time.Duration) error {
		if _, err := conn.Write([]byte(msg)); err != nil {
			return err
		}
		return expect(conn, msg, within)
	}

	require.NoError(t, echo("pass", 10*time.Second))

	p.Blackhole()
	err = echo("held", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "an echo came back through a blackhole: %v", err)
	p.Pass()
	require.NoError(t, expect(conn, "held", 10*time.Second), "the held data after Pass")
	require.NoError(t, echo("again", 10*time.Second))

	p.Reset()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, syscall.ECONNRESET)
}

func expect(conn net.Conn, want string, within time.Duration) error {
	if err := conn.SetReadDeadline(time.Now().Add(within)); err != nil {
		return err
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(conn, got); err != nil {
		return err
	}
	if string(got) != want {
		return io.ErrUnexpectedEOF
	}
	return nil
}
