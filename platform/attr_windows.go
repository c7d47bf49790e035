package platform

// SetNonDumpable is a no-op on Windows: opening another process for reading
// its memory or duplicating its handles is governed by the process's DACL,
// not by a flag the process sets on itself.
func SetNonDumpable() error { return nil }
