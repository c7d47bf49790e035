package local

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestLocalNetworkFilesystemClassification(t *testing.T) {
	for magic, want := range map[uint32]string{
		nfsSuperMagic: "nfs", smbSuperMagic: "smb", cifsMagic: "cifs", smb2Magic: "smb2",
		afsSuperMagic: "afs", cephSuperMagic: "ceph",
		0xEF53: "", 0x01021994: "", 0x9123683E: "", 0x58465342: "", // ext4, tmpfs, btrfs, xfs
		fuseSuperMagic: "", // judged by its mountinfo subtype instead
	} {
		require.Equal(t, want, networkFSName(magic), "magic %#x", magic)
	}
	// The mountinfo lookup finds a mount by its device number.
	var st unix.Stat_t
	require.NoError(t, unix.Stat("/proc/self", &st))
	require.Equal(t, "proc", fuseSubtype(uint64(st.Dev)))
	require.Equal(t, "", fuseSubtype(uint64(unix.Mkdev(4095, 1048575))))

	dir := t.TempDir()
	d, err := os.Open(dir)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, checkReliableLocks(d, dir), "a local disk is accepted")
}
