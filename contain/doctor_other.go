//go:build !linux && !darwin && !windows

package contain

// Doctor reports what this host offers.
func Doctor(ScopeFunc) Diagnosis {
	d := Diagnosis{Backend: "none", Reason: "this operating system has no containment backend in this build (Linux, Windows and macOS do)"}
	d.Facts = append(d.Facts, Fact{Name: "cgroup v2", OK: false, Detail: "cgroups exist only on Linux"})
	return d
}
