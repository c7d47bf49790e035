package main

import (
	"testing"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// fakehold is the program under test, built once by TestMain.
var fakehold proctest.Binary

// TestMain makes the test process the subreaper, builds fakehold and, after the
// tests, proves that nothing they started is alive (proctest.Main).
func TestMain(m *testing.M) {
	proctest.Main(m, func(tmp string) (err error) {
		fakehold, err = proctest.Build(tmp, ".")
		return err
	})
}
