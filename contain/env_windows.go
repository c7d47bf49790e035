package contain

import "strings"

// envKeyEqual compares environment variable names: Windows ignores their case,
// so a secret spelled octostore_token is still the secret.
func envKeyEqual(a, b string) bool { return strings.EqualFold(a, b) }
