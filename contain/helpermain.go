package contain

// Hidden argv[1] values that turn the supervisor's binary, or the lean helper
// image, into one of its helper processes (HelperMain). They are internal, not
// a user interface. They are defined on every platform so that HelperMain
// builds everywhere; where a helper does not exist (Windows has no guardian
// and no shims; only Linux has the join helper, the namespace init and the
// lean image) its Main fails.
const (
	GuardianArg = "__octostore-guardian" // GuardianMain
	ShimArg     = "__octostore-shim"     // ShimMain
	// JoinArg: JoinMain, `__octostore-join LEAF UID:GID|- -- PROGRAM ARGS...`,
	// where clone3 cannot start the program inside its cgroup leaf.
	JoinArg = "__octostore-join"
	// PidInitArg: PidInitMain, the init of a worker's PID namespace
	// (--private-pids), `__octostore-pidinit MAP UID:GID|- [--wait] [--fence] [--follow=FD] --
	// PROGRAM ARGS...`.
	PidInitArg = "__octostore-pidinit"
	// PrestartArg: PrestartMain, a fenced worker's pre-start helper,
	// `__octostore-prestart UID:GID|- [--wait] --fence -- PROGRAM ARGS...`.
	PrestartArg = "__octostore-prestart"
	// SuperviseArg: the supervisor continued in the lean helper image
	// (SuperviseLean), `__octostore-supervise RUNFD ORIGINAL-ARGS...`.
	SuperviseArg = "__octostore-supervise"
)

// HelperMain runs the helper that args (a process's os.Args) name: the
// guardian, a shim, the cgroup join helper, a PID namespace's init or the
// supervisor continued in the lean image (SuperviseLean). ok is
// false when args name none of them. Both the supervisor's binary and the lean
// helper binary (cmd/octostore-helper) start with it, so either can be the
// image helpers are started from. The embedded hold's root (HoldRootArg) is
// not among them: it runs the hold client, which the lean image leaves out,
// so cmd/internal/holdroot dispatches it in the images that have one.
func HelperMain(args []string) (code int, ok bool) {
	switch {
	case len(args) == 2 && args[1] == GuardianArg:
		return GuardianMain(), true
	case len(args) == 2 && args[1] == ShimArg:
		return ShimMain(), true
	case len(args) > 2 && args[1] == JoinArg:
		return JoinMain(args[2:]), true
	case len(args) > 2 && args[1] == PrestartArg:
		return PrestartMain(args[2:]), true
	case len(args) > 2 && args[1] == PidInitArg:
		return PidInitMain(args[2:]), true
	case len(args) > 2 && args[1] == SuperviseArg:
		return superviseMain(args[2:]), true
	}
	return 0, false
}
