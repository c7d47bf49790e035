//go:build !linux

package main

import "github.com/octostore-supervisor/supervisor/contain"

// systemdScope: only Linux has cgroups to ask systemd for.
func systemdScope() contain.ScopeFunc { return nil }
