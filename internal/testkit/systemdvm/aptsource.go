package systemdvm

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Source is one deb entry of apt's configuration.
type Source struct {
	URI     string
	Suites  []string
	Keyring string // Signed-By, when it names a keyring file that exists
	From    string // the file it came from
}

// AptSource returns the first entry of the machine's apt configuration that
// serves suite's main component over http, https or file: the mirror the
// image is built from. It reads /etc/apt/sources.list and
// /etc/apt/sources.list.d/*.list (one-line form) and *.sources (deb822).
func AptSource(suite string) (Source, error) {
	return aptSourceIn("/etc/apt", suite)
}

// mirror returns apt's entry for suite or, when apt has none (a bookworm host
// building a trixie image), the entry for the host's own release: one Debian
// mirror serves every release, and debian-archive-keyring carries the next
// release's keys (debootstrap says so plainly when it does not).
func mirror(suite string) (Source, error) {
	src, err := AptSource(suite)
	if err == nil {
		return src, nil
	}
	host, herr := hostCodename("/etc/os-release")
	if herr != nil || host == suite {
		return Source{}, err
	}
	return AptSource(host)
}

// hostCodename reads VERSION_CODENAME from an os-release file.
func hostCodename(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VERSION_CODENAME="); ok {
			return strings.Trim(v, `"'`), nil
		}
	}
	return "", fmt.Errorf("%s names no VERSION_CODENAME", path)
}

func aptSourceIn(etc, suite string) (Source, error) {
	files := []string{filepath.Join(etc, "sources.list")}
	for _, pat := range []string{"*.list", "*.sources"} {
		m, _ := filepath.Glob(filepath.Join(etc, "sources.list.d", pat))
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var entries []Source
		if strings.HasSuffix(f, ".sources") {
			entries = parseDeb822(string(b), suite)
		} else {
			entries = parseOneLine(string(b), suite)
		}
		for _, e := range entries {
			e.From = f
			return e, nil
		}
	}
	return Source{}, fmt.Errorf("apt's configuration (%s/sources.list, sources.list.d/*.list, *.sources) has no deb entry for %s main to build the VM image from", etc, suite)
}

var optionsRe = regexp.MustCompile(`^\[([^\]]*)\]\s*`)

// parseOneLine reads "deb [options] URI SUITE COMPONENT..." lines.
func parseOneLine(text, suite string) []Source {
	var out []Source
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if !strings.HasPrefix(line, "deb ") && !strings.HasPrefix(line, "deb\t") {
			continue
		}
		line = strings.TrimSpace(line[3:])
		keyring := ""
		if m := optionsRe.FindStringSubmatch(line); m != nil {
			for _, opt := range strings.Fields(m[1]) {
				if k, v, ok := strings.Cut(opt, "="); ok && strings.EqualFold(k, "signed-by") {
					keyring = v
				}
			}
			line = line[len(m[0]):]
		}
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != suite || !contains(f[2:], "main") || !usableURI(f[0]) {
			continue
		}
		out = append(out, Source{URI: f[0], Suites: []string{f[1]}, Keyring: existingFile(keyring)})
	}
	return out
}

// parseDeb822 reads stanzas of Types:, URIs:, Suites:, Components:,
// Signed-By: (and Enabled:); continuation lines (an inline key) are skipped.
func parseDeb822(text, suite string) []Source {
	var out []Source
	for _, stanza := range regexp.MustCompile(`\n\s*\n`).Split(text, -1) {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if line == "" || line[0] == '#' || line[0] == ' ' || line[0] == '\t' {
				continue
			}
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		if strings.EqualFold(fields["enabled"], "no") || !contains(strings.Fields(fields["types"]), "deb") ||
			!contains(strings.Fields(fields["suites"]), suite) || !contains(strings.Fields(fields["components"]), "main") {
			continue
		}
		for _, u := range strings.Fields(fields["uris"]) {
			if usableURI(u) {
				out = append(out, Source{URI: u, Suites: strings.Fields(fields["suites"]), Keyring: existingFile(fields["signed-by"])})
				break
			}
		}
	}
	return out
}

func usableURI(u string) bool {
	for _, p := range []string{"http://", "https://", "file:/"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

func existingFile(p string) string {
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// aptProxy returns apt's Acquire::http::Proxy, which debootstrap takes from
// http_proxy; empty when apt has none (or apt-config is missing).
func aptProxy() string {
	if p := os.Getenv("http_proxy"); p != "" {
		return p
	}
	out, err := exec.Command("apt-config", "dump", "Acquire::http::Proxy").Output()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == "Acquire::http::Proxy" {
			v = strings.Trim(strings.TrimSuffix(strings.TrimSpace(v), ";"), `"`)
			if strings.HasPrefix(v, "http") {
				return v
			}
		}
	}
	return ""
}
