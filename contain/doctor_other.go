//go:build !linux && !darwin && !windows

package contain

// Doctor reports what this host offers.
func Doctor() Diagnosis {
	d := Diagnosis{Backend: "none", Reason: "the Windows job-object backend is not in this build yet"}
	d.Facts = append(d.Facts, Fact{Name: "cgroup v2", OK: false, Detail: "cgroups exist only on Linux"})
	return d
}
