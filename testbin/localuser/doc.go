// Command localuser is what an unprivileged local user runs against the
// supervisors of a host (their interlock names, their authorities'
// addresses): it takes what any user may take, and reports what it got.
//
//	localuser squat NAME
//	localuser relay LISTEN TARGET LOG
//
// squat binds a datagram socket to the abstract unix-socket name NAME (given
// with its leading '@') and keeps it until killed: any user may bind any
// free abstract name, such as a supervisor's interlock name.
//
// relay listens on LISTEN and forwards every connection to TARGET, appending
// every byte a client sends to the file LOG: a relay on a loopback port
// that is free while its server is down or restarting, or on a unix socket
// path someone left free. An address with a '/' is a unix socket path,
// anything else host:port.
//
// Either prints "ready" on stdout once it holds what it took, then runs until
// a signal. Exit codes: 64 for bad arguments, 70 when it cannot take what it
// was asked to. Linux only (elsewhere it exits 64).
//
// A program this module's tests run, not a library and not a user-facing
// tool: it exports no Go API, and its command line may change with the tests
// that drive it.
package main
