//go:build unix

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 4 || os.Args[2] != "--" {
		fmt.Fprintln(os.Stderr, "usage: floor WORKER -- HOLD [ARGS...]")
		os.Exit(64)
	}
	worker := exec.Command(os.Args[1])
	hold := exec.Command(os.Args[3], os.Args[4:]...)
	worker.Stdout, worker.Stderr, hold.Stderr = os.Stderr, os.Stderr, os.Stderr
	worker.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	hold.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	events, err := hold.StdoutPipe()
	if err == nil {
		err = hold.Start()
	}
	if err == nil {
		err = worker.Start()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "floor: %v\n", err)
		os.Exit(70)
	}
	sc := bufio.NewScanner(events)
	for sc.Scan() && !bytes.Contains(sc.Bytes(), []byte(`"lost"`)) {
	}
	_ = syscall.Kill(-worker.Process.Pid, syscall.SIGTERM)
	_ = syscall.Kill(-hold.Process.Pid, syscall.SIGTERM)
	_ = worker.Wait()
	_ = hold.Wait()
}
