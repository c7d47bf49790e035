package main

import (
	"fmt"
	"os"
	"strings"
)

// selfStartTime returns field 22 of /proc/self/stat (start time in clock
// ticks since boot). Together with the pid it names one process for good:
// a recycled pid has a different start time.
func selfStartTime() (string, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return "", err
	}
	// comm (field 2) may contain spaces and ')' so split after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", fmt.Errorf("malformed /proc/self/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", fmt.Errorf("short /proc/self/stat")
	}
	return f[19], nil // f[0] is field 3, so field 22 is f[19]
}

// selfExe is /proc/self/exe, which keeps working even if the binary on disk
// was replaced or removed after start.
func selfExe() (string, error) { return "/proc/self/exe", nil }
