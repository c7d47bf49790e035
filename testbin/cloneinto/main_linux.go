package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: cloneinto DIR PROGRAM ARGS...")
		os.Exit(2)
	}
	fd, err := unix.Open(os.Args[1], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Printf("refused: open %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd, Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Printf("refused: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("cloned %d\n", cmd.Process.Pid)
}
