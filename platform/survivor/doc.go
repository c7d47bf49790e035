// Package survivor is the host's record of processes that outlived a failed
// containment of one authority and name: a supervisor writes it before it lets
// go of the name's interlock, and every later supervisor of that authority and
// name waits until the processes it names are gone (procid.ID.Alive), then
// removes it.
//
// Invariants:
//   - The record is one JSON file in a private state directory; it is only
//     ever replaced whole (write beside, fsync, rename, fsync the directory),
//     so a reader sees the old list or the new one, and a crash loses neither.
//   - An existing record is judged (Dir.OpenExisting) before it is believed:
//     one someone else could have written is refused, not read.
//   - The file names its authority, kind and name (it is stored under a hash
//     of them), for whoever finds it.
//
// The package knows nothing of authorities or their clients, so the
// supervisor can keep using a record after it continues in the lean helper
// image, which links none of them (package contain).
package survivor
