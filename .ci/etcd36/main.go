// Command etcd is the pinned etcd 3.6 server the etcd tests also run against
// (see internal/testkit/etcdtest). It lives in a module of its own so that the
// server's dependencies stay out of the project's go.mod; `make etcd36`
// builds it to bin/etcd-3.6.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
