package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	exitUsage    = 64
	exitSoftware = 70
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	var err error
	switch {
	case len(args) == 2 && args[0] == "squat":
		err = squat(args[1])
	case len(args) == 4 && args[0] == "relay":
		err = relay(args[1], args[2], args[3])
	default:
		fmt.Fprintln(os.Stderr, "usage: localuser squat NAME | localuser relay LISTEN TARGET LOG")
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "localuser: %v\n", err)
		return exitSoftware
	}
	return 0
}

// squat holds the abstract name until a signal.
func squat(name string) error {
	if !strings.HasPrefix(name, "@") {
		return fmt.Errorf("%q is not an abstract name (@…)", name)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: name}); err != nil {
		return fmt.Errorf("bind %s: %w", name, err)
	}
	fmt.Println("ready")
	awaitSignal()
	return nil
}

// relay forwards connections from listen to target, logging what clients send.
func relay(listen, target, logPath string) error {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	defer log.Close()
	ln, err := net.Listen(network(listen), listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go forward(c, target, func(b []byte) {
				mu.Lock()
				defer mu.Unlock()
				_, _ = log.Write(b)
			})
		}
	}()
	fmt.Println("ready")
	awaitSignal()
	return nil
}

// forward copies c to a new connection to target and back; record sees
// every byte c sends.
func forward(c net.Conn, target string, record func([]byte)) {
	defer c.Close()
	t, err := net.Dial(network(target), target)
	if err != nil {
		return
	}
	defer t.Close()
	go func() {
		_, _ = io.Copy(c, t)
		c.Close()
	}()
	_, _ = io.Copy(t, io.TeeReader(c, recorder(record)))
}

type recorder func([]byte)

func (r recorder) Write(b []byte) (int, error) {
	r(b)
	return len(b), nil
}

func network(addr string) string {
	if strings.Contains(addr, "/") {
		return "unix"
	}
	return "tcp"
}

func awaitSignal() {
	s := make(chan os.Signal, 1)
	signal.Notify(s, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	<-s
}
