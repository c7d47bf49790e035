//go:build !linux

package platform

import "errors"

// LandlockScopeABI is the first Landlock ABI with scopes (Linux only).
const LandlockScopeABI = 6

// LandlockFileRulesABI is the first Landlock ABI a fence uses (Linux only).
const LandlockFileRulesABI = 2

// LandlockABI is 0: Landlock is Linux's.
func LandlockABI() int { return 0 }

// ScopeThread is refused: Landlock is Linux's.
func ScopeThread() error { return errors.New("Landlock exists only on Linux") }
