package hold

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
)

// NewElectionID mints a room id as OctoStore does: 24 random bytes, base64url
// without padding (32 characters). One draw in 64 would begin with '-', and an
// id such as "--0If…" is read as a flag wherever it is passed as an argument
// (`octostore election hold --0If…` fails); those draws are drawn again, so an
// id minted here can always be pasted into a command line. (An id from a
// server that begins with '-' still works after `--`.)
func NewElectionID() (string, error) {
	for {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); !strings.HasPrefix(id, "-") {
			return id, nil
		}
	}
}
