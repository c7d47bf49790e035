//go:build !unix && !windows

package hold

import "os"

// readTokenFile on systems that are neither Unix nor Windows keeps upstream's
// non-Unix behaviour: only the regular-file check is possible.
func readTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not open OCTOSTORE_TOKEN_FILE: "+osErrorText(err), err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not inspect OCTOSTORE_TOKEN_FILE: "+osErrorText(err), err)
	}
	if !st.Mode().IsRegular() {
		return "", usageError(ErrToken, "OCTOSTORE_TOKEN_FILE must be a regular file")
	}
	raw, err := readAllUTF8(f)
	if err != nil {
		return "", usageErrorCause(ErrToken, "could not read OCTOSTORE_TOKEN_FILE: "+ioErrorText(err), err)
	}
	return raw, nil
}
