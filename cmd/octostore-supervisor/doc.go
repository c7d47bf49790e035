// Command octostore-supervisor runs an OctoStore hold and a protected worker that
// may run only while the hold has authority; on any loss or doubt it kills the
// worker's whole process tree and proves it gone before it reports.
//
// This package is the command line only: flags, environment variables, usage
// errors and exit codes. The lifecycle and containment live in package contain.
//
// A command, not a library: its flags, output and exit codes (README.md,
// docs/usage.md) are its interface; it exports no Go API.
package main
