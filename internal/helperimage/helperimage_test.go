package helperimage

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendThenFind(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("the supervisor's own bytes")
	base := int64(b.Len())
	helper := []byte("\x7fELF the helper")
	require.NoError(t, Append(&b, helper))

	img, ok, err := Find(bytes.NewReader(b.Bytes()), int64(b.Len()))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, base, img.Offset)
	require.Equal(t, int64(len(helper)), img.Size)
	require.Equal(t, sha256.Sum256(helper), img.Sum)
	require.Equal(t, helper, b.Bytes()[img.Offset:img.Offset+img.Size])
}

func TestFindWithoutBundle(t *testing.T) {
	for _, data := range []string{"", "short", "a plain binary with no trailer at its end, long enough to hold one...................."} {
		_, ok, err := Find(bytes.NewReader([]byte(data)), int64(len(data)))
		require.NoError(t, err)
		require.False(t, ok, "%q", data)
	}
}

func TestFindRefusesALengthBeyondTheFile(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Append(&b, []byte("helper")))
	data := b.Bytes()[2:] // the helper's first bytes cut off: its length no longer fits
	_, _, err := Find(bytes.NewReader(data), int64(len(data)))
	require.ErrorContains(t, err, "names 6 bytes")
}

func TestAppendFileRefusesASecondBundle(t *testing.T) {
	dir := t.TempDir()
	sup, helper := filepath.Join(dir, "sup"), filepath.Join(dir, "helper")
	require.NoError(t, os.WriteFile(sup, []byte("\x7fELF the supervisor"), 0o755))
	require.NoError(t, os.WriteFile(helper, []byte("\x7fELF the helper"), 0o755))
	require.NoError(t, AppendFile(sup, helper))

	f, err := os.Open(sup)
	require.NoError(t, err)
	defer f.Close()
	img, ok, err := FindFile(f)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(len("\x7fELF the supervisor")), img.Offset)

	require.ErrorContains(t, AppendFile(sup, helper), "already carries a helper image")
}

// The hold's image is found below the helpers'; a binary bundled with the
// helpers alone has none, however its own bytes end.
func TestFindHoldBelowTheHelpers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
		return p
	}
	const supBytes = "\x7fELF the supervisor"
	holdImg, helper := write("hold", "\x7fELF the hold"), write("helper", "\x7fELF the helper")
	both, alone := write("both", supBytes), write("alone", supBytes)
	require.NoError(t, AppendFile(both, holdImg, helper))
	require.NoError(t, AppendFile(alone, helper))

	read := func(f *os.File, img Image) string {
		b := make([]byte, img.Size)
		_, err := f.ReadAt(b, img.Offset)
		require.NoError(t, err)
		return string(b)
	}
	f, err := os.Open(both)
	require.NoError(t, err)
	defer f.Close()
	img, ok, err := FindFile(f)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "\x7fELF the helper", read(f, img))
	img, ok, err = FindHold(f)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "\x7fELF the hold", read(f, img))
	require.Equal(t, int64(len(supBytes)), img.Offset)

	g, err := os.Open(alone)
	require.NoError(t, err)
	defer g.Close()
	_, ok, err = FindHold(g)
	require.NoError(t, err)
	require.False(t, ok)
}
