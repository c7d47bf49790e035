package systemdvm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// tools maps each program the kit runs to the Debian package that has it.
var tools = []struct{ name, pkg string }{
	{"qemu-system-x86_64", "qemu-system-x86"},
	{"debootstrap", "debootstrap"},
	{"mkfs.ext4", "e2fsprogs"},
	{"debugfs", "e2fsprogs"},
}

// InstallLine is the command that installs everything the kit needs.
const InstallLine = "apt-get install -y qemu-system-x86 debootstrap e2fsprogs linux-image-amd64"

// CheckTools reports every missing program and a missing /boot kernel in
// one error that ends with the apt-get line installing them.
func CheckTools() error {
	var missing, pkgs []string
	seen := map[string]bool{}
	for _, t := range tools {
		if _, err := lookTool(t.name); err != nil {
			missing = append(missing, t.name)
			if !seen[t.pkg] {
				seen[t.pkg] = true
				pkgs = append(pkgs, t.pkg)
			}
		}
	}
	if _, _, err := hostKernel(); err != nil {
		missing = append(missing, "a kernel and initramfs in /boot")
		pkgs = append(pkgs, "linux-image-amd64")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the systemd VM needs %s: install with\n\tapt-get install -y %s",
		strings.Join(missing, ", "), strings.Join(pkgs, " "))
}

// lookTool finds a program on PATH or in the sbin directories, which a
// non-login root shell may lack on PATH.
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// hostKernel returns /boot's newest vmlinuz-V with an initrd.img-V beside it,
// the running kernel's if /boot has it.
func hostKernel() (kernel, initrd string, err error) {
	kernels, _ := filepath.Glob("/boot/vmlinuz-*")
	var versions []string
	for _, k := range kernels {
		v := strings.TrimPrefix(k, "/boot/vmlinuz-")
		if _, err := os.Stat("/boot/initrd.img-" + v); err == nil {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return "", "", errNoKernel
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		running := strings.TrimSpace(string(b))
		for _, v := range versions {
			if v == running {
				return "/boot/vmlinuz-" + v, "/boot/initrd.img-" + v, nil
			}
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versionLess(versions[i], versions[j]) })
	v := versions[len(versions)-1]
	return "/boot/vmlinuz-" + v, "/boot/initrd.img-" + v, nil
}

// versionLess compares kernel versions such as 6.1.0-57-amd64 field by
// field, numerically where both fields are numbers.
func versionLess(a, b string) bool {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' })
	}
	fa, fb := split(a), split(b)
	for i := 0; i < len(fa) && i < len(fb); i++ {
		if fa[i] == fb[i] {
			continue
		}
		var na, nb int
		_, ea := fmt.Sscanf(fa[i], "%d", &na)
		_, eb := fmt.Sscanf(fb[i], "%d", &nb)
		if ea == nil && eb == nil && na != nb {
			return na < nb
		}
		return fa[i] < fb[i]
	}
	return len(fa) < len(fb)
}
