package platform

import "time"

// WallMillis is the wall clock in whole milliseconds since the Unix epoch, the
// clock a hold stamps into authority_observed_unix_ms.
func WallMillis() int64 { return time.Now().UnixMilli() }
