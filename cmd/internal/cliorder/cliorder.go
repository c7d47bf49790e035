// Package cliorder explains a command line whose flags come before the command
// they belong to. Both binaries accept a command's flags only after the command
// (`octostore-supervisor election --server local …`, `octostore election hold
// --server local …`), as their usage text shows; urfave/cli reports a flag
// given earlier as "flag provided but not defined", which reads as if the flag
// did not exist. Misplaced names the fix instead.
//
// Internal to this module (Go refuses the import elsewhere); no compatibility
// promise.
package cliorder

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// Misplaced returns a message when a word before app's command in args
// (args[0] is the program name) is not one of app's own flags but is a flag of
// one of its commands: which flag, and where it goes - after the command the
// line names, if that command has it, else after the first command that does.
// It returns "" when the words before the command are all app flags, or when
// an unknown flag is unknown everywhere (the parser's own message says that).
func Misplaced(app *cli.App, args []string) string {
	for i, w := range args[1:] {
		if w == "--" || w == "-" || !strings.HasPrefix(w, "-") {
			return "" // the command, or a positional word, comes first
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if hasFlag(app.Flags, name) || slices.Contains([]string{"help", "h", "version", "v"}, name) {
			continue
		}
		path := namedCommand(app, args[i+2:], name)
		if path == "" {
			path = commandWith(app.Commands, name, app.Name)
		}
		if path == "" {
			return ""
		}
		return fmt.Sprintf("%s goes after the command, as in: %s %s …", w, path, w)
	}
	return ""
}

// namedCommand returns the full name of the command the words of rest name, if
// it (or a command above it) defines the flag name. Words before the first
// command name are skipped: they are flags and their values.
func namedCommand(app *cli.App, rest []string, name string) string {
	cmds, path, found := app.Commands, app.Name, ""
	for _, w := range rest {
		c := findCommand(cmds, w)
		if c == nil && path == app.Name {
			continue
		}
		if c == nil {
			break
		}
		path += " " + c.Name
		if hasFlag(c.Flags, name) {
			found = path
		}
		cmds = c.Subcommands
	}
	return found
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func hasFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// commandWith returns the full name ("octostore election hold") of the first
// command, depth first, that defines the flag name.
func commandWith(cmds []*cli.Command, name, prefix string) string {
	for _, c := range cmds {
		path := prefix + " " + c.Name
		if hasFlag(c.Flags, name) {
			return path
		}
		if p := commandWith(c.Subcommands, name, path); p != "" {
			return p
		}
	}
	return ""
}
