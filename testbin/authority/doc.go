// Command authority is a fault-injecting fake of the OctoStore coordination
// service (the contract is docs/protocol.md "Conventions", "Elections API",
// "Locks API" and "Fake server").
//
// It exists to test the Go hold client (`octostore election|lock
// hold|status|watch`) against a server whose every byte is predictable and
// whose misbehaviour can be switched on per test: the real service only ever
// misbehaves by accident, and the client's safety rules (late successes are
// not authority, identity checks on every success, bounded bodies, no
// request storms on absurd timings) can only be proven against a server that
// misbehaves on purpose.
//
// Usage:
//
//	authority [--listen 127.0.0.1:0] [--token T]... [--keepalive DUR] [--sweep DUR]
//
// The first stdout line is the base URL (http://127.0.0.1:PORT). The server
// runs until SIGTERM or SIGINT and then exits 0. Only loopback listen
// addresses are accepted.
//
// Real API routes (docs/protocol.md "Elections API", "Locks API",
// "Health endpoints"): POST /elections, GET /elections/{id}, POST
// /elections/{id}/campaign|renew|resign, GET /elections/{id}/watch, POST
// /locks/{name}/acquire|renew|release, GET /locks/{name}, GET
// /locks/{name}/watch, POST /sessions, POST /sessions/{id}/keepalive,
// DELETE|GET /sessions/{id}, GET /health, GET /status.
//
// Control routes live under /__control/, a prefix the real API never uses:
//
//	POST   /__control/faults     Fault or [Fault] JSON -> {"ids":[...]}
//	GET    /__control/faults     active faults (with "used" counts)
//	DELETE /__control/faults     clear all faults
//	GET    /__control/requests   request log [{seq,method,path,route,status,...}];
//	                             ?route=NAME filters
//	DELETE /__control/requests   clear the log
//	POST   /__control/clock      {"advance_ms":N} -> {"now":"..."}
//	POST   /__control/revoke     {"election_id":ID,"candidate_id":C} or {"lock":NAME}
//	                             -> {"term":N} (a new holder takes over, new term)
//	POST   /__control/expire     {"election_id":ID} | {"lock":NAME} | {"session_id":ID}
//	POST   /__control/sweep      run expiry cleanup now
//	POST   /__control/elections  {"enabled":false} -> elections answer 403
//
// See Fault in faults.go for the fault kinds and their parameters.
//
// A program this module's tests (and benchmarks) run, not a library and not a
// user-facing tool: it exports no Go API, and its command line may change
// with the tests that drive it.
package main
