package contain

import "github.com/octostore-supervisor/supervisor/platform"

// systemdHost reports whether systemd is this host's service manager, and so
// whether users may have service managers of their own (usermanager.go).
func systemdHost() bool { return platform.SystemdBooted() }
