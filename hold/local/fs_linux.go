package local

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/hold"
)

// Magic numbers of statfs(2) f_type for file systems whose locks may not be
// honoured by (or across) every host that mounts them.
const (
	nfsSuperMagic  = 0x6969
	smbSuperMagic  = 0x517B
	cifsMagic      = 0xFF534D42
	smb2Magic      = 0xFE534D42
	afsSuperMagic  = 0x5346414F
	cephSuperMagic = 0x00C36400
	fuseSuperMagic = 0x65735546
)

// networkFSName names a refused file system by its magic; "" is acceptable.
// FUSE is judged by its subtype (see fuseSubtype), since most FUSE file
// systems are local.
func networkFSName(magic uint32) string {
	switch magic {
	case nfsSuperMagic:
		return "nfs"
	case smbSuperMagic:
		return "smb"
	case cifsMagic:
		return "cifs"
	case smb2Magic:
		return "smb2"
	case afsSuperMagic:
		return "afs"
	case cephSuperMagic:
		return "ceph"
	}
	return ""
}

// checkReliableLocks refuses a state directory on a network file system:
// there flock is emulated, lost on server restarts, or not shared between the
// hosts that mount it, so two hosts could both lead.
func checkReliableLocks(d *os.File, dir string) error {
	sfs, err := fstatfs(d, dir)
	if err != nil {
		return err
	}
	magic := uint32(sfs.Type)
	name := networkFSName(magic)
	if name == "" && magic == fuseSuperMagic {
		fi, err := d.Stat()
		if err != nil {
			return stateDirErrorCause(err, "could not inspect local state directory %s: %s", dir, hold.OSErrorText(err))
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if sub := fuseSubtype(uint64(st.Dev)); sub == "fuse.sshfs" {
				name = sub
			}
		}
	}
	if name != "" {
		return stateDirError("local state directory %s is on a network file system (%s) where file locks are not reliable; refusing it", dir, name)
	}
	return nil
}

// fuseSubtype finds the type of the mount with device dev in
// /proc/self/mountinfo ("" if not found): "36 35 0:45 / /mnt rw - fuse.sshfs host:/ rw".
func fuseSubtype(dev uint64) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	want := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[2] != want {
			continue
		}
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) {
				return fields[i+1]
			}
		}
	}
	return ""
}
