//go:build !linux

package hold

// continuousAlarms: without a timerfd, platform.ContinuousTimer polls too, so
// wakeBy samples the clocks itself (AuthorityPoll), as before.
const continuousAlarms = false
