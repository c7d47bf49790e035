package local

// checkParents: %LOCALAPPDATA% is the user's own profile; no root there.
func checkParents(string) error { return nil }
