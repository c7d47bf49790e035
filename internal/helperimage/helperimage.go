// Package helperimage bundles the helper binary (cmd/octostore-helper) and the
// embedded hold's image (cmd/octostore-hold) with the supervisor's binary and
// finds them there again.
//
// The supervisor's guardian and shims need none of the authorities' code, but a
// process pays at every start and in memory for every package its binary links
// (the etcd client brings grpc and protobuf, whose initialisation is most of a
// helper's start-up). So `make build` appends a binary that links only the
// containment code to the supervisor's binary, and the supervisor starts its
// helpers from that (contain, helpercache_linux.go); before it, a build of the hold
// client without the etcd client, which every embedded hold but an etcd one
// runs from. Appending keeps one file to install and leaves the supervisor
// itself unchanged: ELF loaders map what the program headers name and ignore
// what follows.
//
// Invariants: an image is its bytes, then their SHA-256, their length (8
// bytes, little endian) and a fixed magic line, in that order. The helpers'
// image ends the file; the hold's, when there is one, ends where the helpers'
// begins. Find reports an image only when all of that is present and the
// length fits in what precedes it; it does not hash the image (the sum names
// it, it is checked where the image is written out).
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

// Image is where a bundled image sits in the supervisor's binary.
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

// Find looks for a bundled image that ends at size: the helpers' when size
// is the binary's; false means there is none.
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

// AppendFile appends the images at imagePaths, in that order, to the
// supervisor's binary at supPath: the hold's image (if any), then the
// helpers', which must come last. A binary that already carries an image is
// refused: a second bundle would hide the first.
func AppendFile(supPath string, imagePaths ...string) error {
	sup, err := os.OpenFile(supPath, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer sup.Close()
	if _, ok, err := FindFile(sup); err != nil || ok {
		return fmt.Errorf("%s already carries a helper image (or a damaged one: %v); build it afresh", supPath, err)
	}
	for _, p := range imagePaths {
		image, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := Append(sup, image); err != nil {
			return fmt.Errorf("append %s to %s: %w", p, supPath, err)
		}
	}
	return sup.Close()
}

// FindHold finds the embedded hold's image in f, below its helper image;
// false means there is none (a binary bundled with the helpers alone).
func FindHold(f *os.File) (Image, bool, error) {
	helper, ok, err := FindFile(f)
	if err != nil || !ok {
		return Image{}, false, err
	}
	return Find(f, helper.Offset)
}
