package holdcli

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// SetUsageText gives app and every command in it a UsageText written the way
// the parser takes the words: a command that runs gets one line (its full
// name, "[flags]" when it has any, its ArgsUsage); a group, and app itself,
// the lines of every command below. Both octostore and octostore-supervisor
// call it, so --help and every usage error (FormatUsage) show the usage of
// the command the user typed, where a shared line once showed another
// command's.
func SetUsageText(app *cli.App) {
	app.UsageText = strings.Join(usageLines(app.Name, app.Commands), "\n")
}

// usageLines sets the UsageText of cmds (named below prefix) and returns
// their lines.
func usageLines(prefix string, cmds []*cli.Command) []string {
	var all []string
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		name := prefix + " " + c.Name
		lines := usageLines(name, c.Subcommands)
		if len(c.Subcommands) == 0 {
			if len(c.Flags) > 0 {
				name += " [flags]"
			}
			if c.ArgsUsage != "" {
				name += " " + c.ArgsUsage
			}
			lines = []string{name}
		}
		c.UsageText = strings.Join(lines, "\n")
		all = append(all, lines...)
	}
	return all
}

// FormatUsage is a UsageText as a usage error prints it: "usage: " before
// the first line, the others aligned beneath it.
func FormatUsage(usageText string) string {
	return "usage: " + strings.ReplaceAll(usageText, "\n", "\n       ")
}
