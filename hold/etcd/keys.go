package etcd

import (
	"net/url"
	"strconv"

	"github.com/octostore-supervisor/supervisor/hold"
)

// namePrefix is the directory of one election or lock, ending in '/'. The
// name is percent-encoded ('/' included), so lock "a"'s prefix never
// matches "a/b"'s keys (invariant 9); ordinary election ids and lock names
// are unchanged by it, so `etcdctl elect -l <prefix>/election/<id>` works.
func (t target) namePrefix(kind hold.Kind, name string) string {
	return t.prefix + "/" + kind.String() + "/" + url.PathEscape(name) + "/"
}

// leaseHex is the key suffix the concurrency package uses: %x of the lease.
func leaseHex(lease int64) string { return strconv.FormatInt(lease, 16) }
