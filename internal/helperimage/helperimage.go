// Package helperimage bundles the helper binary (cmd/octostore-helper) with the
// supervisor's binary and finds it there again.
//
// The supervisor's guardian and shims need none of the authorities' code, but a
// process pays at every start and in memory for every package its binary links
// (the etcd client brings grpc and protobuf, whose initialisation is most of a
// helper's start-up). So `make build` appends a binary that links only the
// containment code to the supervisor's binary, and the supervisor starts its
// helpers from that (contain, helper_linux.go). Appending keeps one file to
// install and leaves the supervisor itself unchanged: ELF loaders map what the
// program headers name and ignore what follows.
//
// Invariants: a bundle is the helper's bytes, then their SHA-256, their length
// (8 bytes, little endian) and a fixed magic line, in that order, at the very
// end of the file. Find reports a bundle only when all of that is present and
// the length fits in the file; it does not hash the helper (the sum names the
// image, it is checked where the image is written out).
package helperimage

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// magic ends every bundle; the version in it changes with the layout.
const magic = "\nocto-helper/1\n"

const trailerLen = int64(sha256.Size + 8 + len(magic))

// Image is where a bundled helper sits in the supervisor's binary.
type Image struct {
	Offset int64
	Size   int64
	Sum    [sha256.Size]byte
}

// Append writes helper and its trailer to w, which is positioned at the end of
// the supervisor's binary.
func Append(w io.Writer, helper []byte) error {
	sum := sha256.Sum256(helper)
	var size [8]byte
	binary.LittleEndian.PutUint64(size[:], uint64(len(helper)))
	for _, b := range [][]byte{helper, sum[:], size[:], []byte(magic)} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Find looks for a bundled helper at the end of a binary of the given size;
// false means there is none.
func Find(r io.ReaderAt, size int64) (Image, bool, error) {
	if size < trailerLen {
		return Image{}, false, nil
	}
	var t [trailerLen]byte
	if _, err := r.ReadAt(t[:], size-trailerLen); err != nil {
		return Image{}, false, fmt.Errorf("read the helper trailer: %w", err)
	}
	if !bytes.Equal(t[sha256.Size+8:], []byte(magic)) {
		return Image{}, false, nil
	}
	n := binary.LittleEndian.Uint64(t[sha256.Size : sha256.Size+8])
	if n == 0 || n > uint64(size-trailerLen) {
		return Image{}, false, fmt.Errorf("helper trailer names %d bytes in a file of %d", n, size)
	}
	img := Image{Offset: size - trailerLen - int64(n), Size: int64(n)}
	copy(img.Sum[:], t[:sha256.Size])
	return img, true, nil
}

// FindFile is Find on an open binary, whose size it takes from the file.
func FindFile(f *os.File) (Image, bool, error) {
	st, err := f.Stat()
	if err != nil {
		return Image{}, false, err
	}
	return Find(f, st.Size())
}

// AppendFile appends the helper binary at helperPath to the supervisor's
// binary at supPath. A binary that already carries a helper is refused:
// helpers do not nest, and a second bundle would hide the first.
func AppendFile(supPath, helperPath string) error {
	helper, err := os.ReadFile(helperPath)
	if err != nil {
		return err
	}
	sup, err := os.OpenFile(supPath, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer sup.Close()
	if _, ok, err := FindFile(sup); err != nil || ok {
		return fmt.Errorf("%s already carries a helper image (or a damaged one: %v); build it afresh", supPath, err)
	}
	if err := Append(sup, helper); err != nil {
		return fmt.Errorf("append the helper to %s: %w", supPath, err)
	}
	return sup.Close()
}
