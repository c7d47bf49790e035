//go:build !windows

package main

import "os"

// executable: an execute bit for anyone, as the reference's `-x` test asks.
func executable(_ string, st os.FileInfo) bool { return st.Mode().Perm()&0o111 != 0 }
