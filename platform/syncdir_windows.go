package platform

import "os"

// SyncDir does nothing: NTFS journals directory entries itself, and
// FlushFileBuffers on a directory handle needs write access Go's directory
// handles lack.
func SyncDir(*os.File) error { return nil }
