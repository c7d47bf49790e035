//go:build !octostore_testhooks

package main

import "github.com/octostore-supervisor/supervisor/contain"

// testHooks does nothing in a release build: there is no pause point to reach.
func testHooks(*contain.Config, []string) {}

// testBackendHook does nothing in a release build.
func testBackendHook(*contain.Backend) {}
