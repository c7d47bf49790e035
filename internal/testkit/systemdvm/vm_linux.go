package systemdvm

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// Boot is the outcome of one boot.
type Boot struct {
	Results string        // the payload's results/ directory, copied out
	Console string        // the console log (ttyS0)
	Took    time.Duration // qemu's whole life
	Killed  bool          // qemu overran its limit and was SIGKILLed
	// Retried is the console log of a first boot whose kernel panicked
	// before the payload ran (kept beside Console); "" when none did.
	Retried string
}

// panickedEarly reports whether the kernel panicked before the payload
// runner came up: the payload disk is then as it was written.
func (b *Boot) panickedEarly() bool {
	console, err := os.ReadFile(b.Console)
	return err == nil && bytes.Contains(console, []byte("Kernel panic - not syncing")) &&
		!bytes.Contains(console, []byte("octo-e2e: payload runner up"))
}

// ConsoleTail returns the console log's last n lines, for failure messages.
func (b *Boot) ConsoleTail(n int) string { return Tail(b.Console, n) }

// Run boots the image with payloadDir on the payload disk, waits for the VM
// to power off (at most limit, then SIGKILL), proves qemu gone and copies
// the payload's results/ into workDir/results. payloadDir must hold an
// executable run.sh. The returned Boot is non-nil whenever qemu ran, also
// with an error, so its console and any partial results can be reported.
func (img *Image) Run(ctx context.Context, payloadDir, workDir string, limit time.Duration) (*Boot, error) {
	if _, err := os.Stat(filepath.Join(payloadDir, "run.sh")); err != nil {
		return nil, fmt.Errorf("the payload has no run.sh: %w", err)
	}
	disk := filepath.Join(workDir, "payload.img")
	if err := makePayloadDisk(ctx, payloadDir, disk); err != nil {
		return nil, err
	}
	b := &Boot{Console: filepath.Join(workDir, "console.log")}
	if err := os.Remove(b.Console); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(workDir, "results")); err != nil {
		return nil, err
	}
	if err := img.runQemu(disk, b, limit); err != nil {
		return b, err
	}
	if b.panickedEarly() {
		// qemu's TCG, running two vCPUs on threads of their own, now and
		// then panics the kernel at boot, while it patches its own text
		// (an int3 left by text_poke_bp). That is the emulator's, not the
		// payload's: boot once more, and say so.
		kept := b.Console + ".panicked"
		os.Rename(b.Console, kept)
		b.Retried = kept
		if err := img.runQemu(disk, b, limit); err != nil {
			return b, err
		}
	}
	b.Results = filepath.Join(workDir, "results")
	if err := dumpResults(disk, workDir); err != nil {
		return b, err
	}
	if b.Killed {
		return b, fmt.Errorf("qemu ran past %s and was killed; console:\n%s", limit, b.ConsoleTail(40))
	}
	return b, nil
}

func makePayloadDisk(ctx context.Context, dir, disk string) error {
	// The payload disk's root takes the directory's mode: other users of the
	// VM must reach the payload.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	size := int64(64 << 20)
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				size += info.Size() + 4096
			}
		}
		return nil
	})
	size = max(2*size, 256<<20)
	f, err := os.Create(disk)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	f.Close()
	mkfs, err := lookTool("mkfs.ext4")
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, mkfs, "-q", "-F", "-L", "octo-payload", "-d", dir, disk).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4 -d %s: %w: %s", dir, err, out)
	}
	return nil
}

func (img *Image) runQemu(payloadDisk string, b *Boot, limit time.Duration) error {
	qemu, err := lookTool("qemu-system-x86_64")
	if err != nil {
		return err
	}
	args := []string{
		"-accel", "tcg,thread=multi", "-cpu", "max", "-smp", "2", "-m", "2048",
		"-kernel", img.Kernel, "-initrd", img.Initrd,
		// panic=1 with -no-reboot: a panicked kernel ends qemu at once
		// instead of at the limit.
		"-append", "root=/dev/vda rw console=ttyS0 quiet systemd.show_status=error panic=1",
		"-drive", "file=" + img.Disk + ",format=raw,if=virtio,snapshot=on",
		"-drive", "file=" + payloadDisk + ",format=raw,if=virtio",
		"-display", "none", "-monitor", "none", "-serial", "file:" + b.Console,
		"-no-reboot",
	}
	cmd := exec.Command(qemu, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	// qemu dies with us (a test binary killed by its -timeout), and it gets
	// a process group of its own, away from our terminal's signals.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	done, err := proctest.StartOwned(cmd)
	if err != nil {
		return fmt.Errorf("start qemu: %w", err)
	}
	pid := cmd.Process.Pid
	select {
	case <-done:
	case <-time.After(limit):
		b.Killed = true
		syscall.Kill(pid, syscall.SIGKILL)
		<-done
	}
	b.Took = time.Since(start)
	if err := provenGone(pid, b.Console); err != nil {
		return err
	}
	if !cmd.ProcessState.Success() && !b.Killed {
		return fmt.Errorf("qemu: %s: %s; console:\n%s", cmd.ProcessState, strings.TrimSpace(stderr.String()), b.ConsoleTail(40))
	}
	return nil
}

// provenGone checks, after qemu was reaped, that no process runs with this
// boot's console path on its command line: its pid was reaped (so it cannot
// be signalled by mistake later), and nothing of it remains.
func provenGone(pid int, console string) error {
	if err := syscall.Kill(pid, 0); err == nil {
		if cmdlineHas(pid, console) {
			return fmt.Errorf("qemu (pid %d) still runs after it was reaped", pid)
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmdlineHas(p, console) {
			return fmt.Errorf("a qemu of this boot (pid %d) still runs", p)
		}
	}
	return nil
}

func cmdlineHas(pid int, s string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(b, []byte(s))
}

// dumpResults copies results/ out of the payload disk with debugfs, which
// reads the file system without mounting it.
func dumpResults(disk, workDir string) error {
	debugfs, err := lookTool("debugfs")
	if err != nil {
		return err
	}
	out, err := exec.Command(debugfs, "-R", "rdump /results "+workDir, disk).CombinedOutput()
	if err != nil {
		return fmt.Errorf("debugfs rdump /results: %w: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(workDir, "results")); err != nil {
		return fmt.Errorf("the payload disk has no results/ (the payload runner never ran?): %s", out)
	}
	return nil
}
