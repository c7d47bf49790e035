//go:build !octostore_testhooks || !linux

package main

import "github.com/octostore-supervisor/supervisor/contain"

// testHooks does nothing in a release build (and in test builds off Linux,
// whose tests do not pause the supervisor): there is no pause point to reach.
func testHooks(*contain.Config, []string) {}

// testBackendHook does nothing in a release build.
func testBackendHook(*contain.Backend) {}
