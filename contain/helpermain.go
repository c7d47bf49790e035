package contain

// HelperMain runs the helper that args (a process's os.Args) name: the
// guardian, a shim, the cgroup join helper, a PID namespace's init or the
// supervisor continued in the lean image (SuperviseLean). ok is
// false when args name none of them. Both the supervisor's binary and the lean
// helper binary (cmd/octostore-helper) start with it, so either can be the
// image helpers are started from.
func HelperMain(args []string) (code int, ok bool) {
	switch {
	case len(args) == 2 && args[1] == GuardianArg:
		return GuardianMain(), true
	case len(args) == 2 && args[1] == ShimArg:
		return ShimMain(), true
	case len(args) > 2 && args[1] == JoinArg:
		return JoinMain(args[2:]), true
	case len(args) > 2 && args[1] == PidInitArg:
		return PidInitMain(args[2:]), true
	case len(args) > 2 && args[1] == SuperviseArg:
		return superviseMain(args[2:]), true
	}
	return 0, false
}
