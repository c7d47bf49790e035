package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type tokenList []string

func (t *tokenList) String() string     { return strings.Join(*t, ",") }
func (t *tokenList) Set(v string) error { *t = append(*t, v); return nil }

// run is main without os.Exit so tests can drive it in-process too.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("authority", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to listen on")
	var tokens tokenList
	fs.Var(&tokens, "token", "accepted bearer token (repeatable)")
	keepalive := fs.Duration("keepalive", 15*time.Second, "SSE keepalive interval")
	sweep := fs.Duration("sweep", time.Second, "expiry cleanup interval (0 disables)")
	if err := fs.Parse(args); err != nil {
		return 64
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "authority: %v\n", err)
		return 64
	}
	// The fake must never be reachable from off the machine.
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "authority: refusing non-loopback listen address %q\n", *listen)
		return 64
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "authority: %v\n", err)
		return 70
	}
	a := New(Options{Tokens: tokens, KeepaliveInterval: *keepalive})
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr().String())

	var tick <-chan time.Time
	if *sweep > 0 {
		t := time.NewTicker(*sweep)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			a.Sweep() // so watchers see expiries without any request arriving
		case <-sigs:
			a.Close() // unblock stalls and SSE streams before shutting down
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := srv.Shutdown(ctx)
			cancel()
			if err != nil {
				_ = srv.Close()
			}
			return 0
		case err := <-served:
			if !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(stderr, "authority: %v\n", err)
				return 70
			}
			return 0
		}
	}
}
