//go:build !linux

package contain

import "runtime"

// Doctor reports what this host offers.
func Doctor() Diagnosis {
	d := Diagnosis{Backend: BackendProcessGroup}
	d.Facts = append(d.Facts, Fact{Name: "cgroup v2", OK: false, Detail: "cgroups exist only on Linux"})
	switch runtime.GOOS {
	case "darwin":
		d.Facts = append(d.Facts, Fact{Name: "child subreaper", OK: false, Detail: "macOS has no child subreaper: a descendant that leaves the process group and the parent chain cannot be followed; the macOS backend is not in this build yet"})
		d.Reason = "the supervisor refuses to run here until the macOS backend lands"
	default:
		d.Backend = "none"
		d.Reason = "the Windows job-object backend is not in this build yet"
	}
	return d
}
