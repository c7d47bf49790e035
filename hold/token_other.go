//go:build !unix && !windows

package hold

import "os"

// readSecretFile on systems that are neither Unix nor Windows keeps upstream's
// non-Unix behaviour: only the regular-file check is possible.
func readSecretFile(path, name string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not open "+name+": "+osErrorText(err), err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not inspect "+name+": "+osErrorText(err), err)
	}
	if !st.Mode().IsRegular() {
		return "", usageError(ErrToken, name+" must be a regular file")
	}
	raw, err := readAllUTF8(f)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not read "+name+": "+ioErrorText(err), err)
	}
	return raw, nil
}
