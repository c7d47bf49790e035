package main

// selfExe is /proc/self/exe, which keeps working even if the binary on disk
// was replaced or removed after start.
func selfExe() (string, error) { return "/proc/self/exe", nil }
