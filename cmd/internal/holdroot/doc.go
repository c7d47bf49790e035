// Package holdroot runs the embedded hold as the root of its own group: the
// octostore hold client (cmd/internal/holdcli) under contain.HoldRootMain, as the
// guardian starts it (argv[1] is contain.HoldRootArg). Both images the guardian
// may start it from call Main first: the supervisor's own binary, for etcd
// holds, and the bundled hold image (cmd/octostore-hold), built without the etcd
// client, for every other authority.
//
// Invariant: Main claims only an argv whose argv[1] is contain.HoldRootArg,
// and the hold it runs is holdcli's, with the same arguments either image
// gets, so the two images print the same events for the same hold.
package holdroot
