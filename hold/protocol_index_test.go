package hold

// Coverage index: items 1–13 of docs/protocol.md "Easy to miss" (item 14, a
// closed stdout, is left to the supervisor's deadline), every row of
// docs/protocol.md "Exit codes" and every hold scenario (L1–L18) of
// docs/protocol.md "Hold scenarios", mapped to the tests that pin it. Tests are
// in hold/ unless marked (holdcli) = cmd/internal/holdcli, the octostore command
// line, whose tests run the built binary. "Every run" means the finish()
// helpers of election_test.go / lock_test.go, which validate each printed
// line with the supervisor's own events.Stream (no waiting after authority,
// one authority start, same term, sequence) and, in the protocol tests,
// checkShape against the golden lines of golden_test.go.
// TestCoverageIndexNamesExistingTests keeps this table honest.
//
// "Easy to miss" item                             tests
// 1  never reacquire                              TestElectionHoldRenewProvesLoss, TestProtocolElectionLostWithoutReacquisition,
//                                                 TestProtocolLockLostWithoutReacquisition, TestProtocolElectionAuthorityDisappears,
//                                                 TestProtocolElectionIdentityValidated
// 2  no waiting after authority, one start        TestProtocolElectionNoWaitingAfterAuthority, TestProtocolLockNoWaitingAfterAuthority
//                                                 (and every run)
// 3  deadlines from request start, both clocks,   TestProtocolElectionAuthorityFromRequestStart, TestProtocolLockAuthorityFromRequestStart,
//    polled ≤100 ms                               TestProtocolElectionSuspendNoticedOnContinuousClock,
//                                                 TestProtocolLockSuspendNoticedOnContinuousClock,
//                                                 TestProtocolLockKeepaliveIntervalPastSessionBound, TestNowSamplesContinuousFirst,
//                                                 TestDeadlineArithmetic, TestObserveAuthority
// 4  every request bounded end to end             TestProtocolElectionAcquireTimeoutCapsStalls, TestProtocolLockAcquireTimeoutCapsStalls,
//    (stalled headers / bodies)                   TestElectionHoldAcquireTimeoutDuringCampaign, TestProtocolElectionRenewalDeadlineCapsStalls,
//                                                 TestProtocolLockRenewalDeadlineCapsStalls, TestProtocolLockSessionBoundCapsLongTTL,
//                                                 TestProtocolElectionRequestTimeoutBoundsCampaign,
//                                                 TestProtocolLockRequestTimeoutBoundsRequests, TestSignalShutdownBudget
// 5  late successes are not authority             TestProtocolElectionLateSuccessIsNotAuthority, TestProtocolLockLateSuccessIsNotAuthority,
//                                                 TestProtocolElectionLateRenewalIsNotAuthority, TestElectionHoldLateInitialAuthority,
//                                                 TestProtocolLockLateInitialAuthority
// 6  identity of every success                    campaign/renew: TestProtocolElectionIdentityValidated, TestElectionHoldIdentityMismatch,
//                                                 TestElectionHoldRenewTermChanged; lock renew: TestLockHoldLeaseChanged;
//                                                 keepalive: TestProtocolLockKeepaliveIdentity; resign:
//                                                 TestProtocolElectionResignIdentityValidated, TestElectionHoldReleaseUnconfirmed;
//                                                 release null: TestLockHoldReleaseUnconfirmed
// 7  retry guidance, floors, no storms            TestProtocolElectionRetryGuidance, TestProtocolElectionInvalidGuidanceOn4xx,
//                                                 TestProtocolElectionZeroRenewAfterNoStorm, TestProtocolElectionAbsurdRenewAfter,
//                                                 TestProtocolLockZeroTimings, TestProtocolLockHeldAndDelayed,
//                                                 TestProtocolLockRetryableAcquireWaiting, TestGuidedWaitDelay, TestBackoffWaitDelay,
//                                                 TestRenewalSchedule, TestCallErrorBodyDecoding
// 8  keepalives never authorize an early          TestProtocolLockKeepaliveNeverAuthorizesEarlyAcquire,
//    acquire; 24 s session bound                  TestProtocolLockKeepaliveFailuresBeforeAcquisition, TestProtocolLockSessionBoundCapsLongTTL,
//                                                 TestProtocolLockKeepaliveIntervalPastSessionBound, TestProtocolLockAuthorityFromRequestStart
// 9  1 MiB cap, redirects never followed          TestProtocolElectionOversizedResponses, TestProtocolLockOversizedResponses,
//                                                 TestCallResponseBound, TestProtocolElectionRedirectsNotFollowed,
//                                                 TestProtocolLockRedirectsNotFollowed, TestCallNoRedirect
//                                                 (the 64 KiB SSE frame cap belongs to watch: not a hold path)
// 10 secrets never printed                        TestProtocolLockSecretsNeverPrinted, TestProtocolLockKeepaliveIdentity,
//                                                 TestLeaderTokenNeverPrinted (holdcli), TestCapabilityTransportAndProxies (holdcli)
// 11 loopback capability traffic bypasses         TestProtocolElectionLoopbackBypassesProxies, TestProtocolLockLoopbackBypassesProxies,
//    proxies; cleartext needs the flag            TestCapabilityTransportAndProxies (holdcli), TestNoProxyForCapabilityLoopback,
//                                                 TestValidateServerErrors, TestElectionHoldUsage (holdcli)
// 12 signal shutdown: one attempt, one budget     TestSignalShutdownBudget, TestSignalShutdownSingleAttempt,
//    min(shutdown-timeout, 2 s, remaining)        TestSignalDuringAuthorityReleases, TestSignalBeforeAuthorityNoEvent,
//                                                 TestSignalHoldShutdownBudget (holdcli), TestSignalHoldDuringAuthority (holdcli),
//                                                 TestSignalHoldBeforeAuthority (holdcli)
// 13 Go pitfalls: no gzip, UA, Accept, no         TestProtocolElectionWireRequests, TestProtocolLockWireRequests, TestCallHeadersAndPath,
//    redirects, no HTML escaping, pointer         TestGoldenZeroTermAndEscaping, TestGoldenTimestampWidths, TestGoldenEventBytes,
//    fields, AutoSi, one flushed line per event   TestEncodeSegment
//
// "Exit codes" row                                tests
// 0   create/status, --help/--version; never a    TestExitCodesHelpAndUsage (holdcli), TestElectionCreateOutput (holdcli),
//     hold (every hold test asserts its non-zero  TestElectionStatusOutput (holdcli), TestLockStatusOutput (holdcli)
//     status)
// 11  acquisition deadline (after error           TestElectionHoldAcquireTimeout, TestElectionHoldAcquireTimeoutZero,
//     acquire_timeout)                            TestLockHoldHeldThenAcquireTimeout, TestProtocolElectionAcquireTimeoutCapsStalls,
//                                                 TestProtocolLockAcquireTimeoutCapsStalls, TestProtocolLockHeldAndDelayed,
//                                                 TestProtocolElectionLateSuccessIsNotAuthority, TestProtocolLockLateSuccessIsNotAuthority
// 20  lost / uncertain, incl. pre-authority and   TestElectionHoldRenewProvesLoss, TestProtocolLockLostWithoutReacquisition,
//     a budget floored to 0                       TestProtocolElectionRenewalDeadlineCapsStalls, TestElectionHoldLateInitialAuthority,
//                                                 TestProtocolElectionIdentityValidated, TestProtocolLockSuspendNoticedOnContinuousClock,
//                                                 TestProtocolLockKeepaliveFailuresBeforeAcquisition, TestProtocolLockKeepaliveIdentity,
//                                                 TestProtocolElectionLateSuccessIsNotAuthority, TestProtocolLockLateSuccessIsNotAuthority
// 64  usage / local validation; pre-acquisition   TestElectionHoldUsage (holdcli), TestLockHoldUsage (holdcli), TestExitCodesHelpAndUsage (holdcli),
//     non-retryable 4xx (with error event)        TestCapabilityTransportAndProxies (holdcli), TestElectionHoldRetryableThenFatal,
//                                                 TestLockHoldAcquireFatal, TestProtocolElectionInvalidGuidanceOn4xx
// 70  3xx; non-retryable session creation;        TestProtocolElectionRedirectsNotFollowed, TestProtocolLockRedirectsNotFollowed,
//     non-loss keepalive failure before           TestLockHoldSessionCreateFatal, TestProtocolLockKeepaliveFailuresBeforeAcquisition,
//     acquisition; bad keepalive_interval_secs;   TestLockHoldBadKeepaliveInterval, TestProtocolLockZeroTimings,
//     unsupported OS clock                        TestProtocolElectionUnsupportedClock, TestProtocolLockUnsupportedClock
// 130 SIGINT / 143 SIGTERM (before authority: no  TestSignalBeforeAuthorityNoEvent, TestSignalDuringAuthorityReleases, TestSignalShutdownBudget,
//     event; after: released or uncertain         TestSignalShutdownSingleAttempt, TestSignalHoldBeforeAuthority (holdcli),
//     release_unconfirmed)                        TestSignalHoldDuringAuthority (holdcli), TestSignalHoldShutdownBudget (holdcli),
//                                                 TestProtocolElectionContextCancelIsSIGTERM
//
// "Hold scenarios"                                tests
// L1  capability transport, proxies              TestCapabilityTransportAndProxies (holdcli), TestProtocolElectionLoopbackBypassesProxies
// L2  held vs delayed, acquire timeout            TestProtocolLockHeldAndDelayed
// L3  acquisition deadline caps stalls            TestProtocolElectionAcquireTimeoutCapsStalls, TestProtocolLockAcquireTimeoutCapsStalls
// L4  zero server timings, no storms              TestProtocolElectionZeroRenewAfterNoStorm, TestProtocolLockZeroTimings
// L5  late or mismatched initial authority        TestElectionHoldLateInitialAuthority, TestProtocolLockLateInitialAuthority,
//                                                 TestProtocolElectionIdentityValidated
// L6  guidance independent of keepalives          TestProtocolLockKeepaliveNeverAuthorizesEarlyAcquire
// L7  keepalive mismatch before acquisition       TestProtocolLockKeepaliveIdentity
// L8  keepalive mismatch after acquisition        TestProtocolLockKeepaliveIdentity
// L9  retryable session creation                  TestProtocolLockRetryableSessionCreation
// L10 renewal deadline caps stalls                TestProtocolElectionRenewalDeadlineCapsStalls, TestProtocolLockRenewalDeadlineCapsStalls,
//                                                 TestLeaderTokenNeverPrinted (holdcli)
// L11 long lock TTL vs 24 s session bound         TestProtocolLockSessionBoundCapsLongTTL
// L12 stale lease: lost, no reacquisition         TestProtocolElectionLostWithoutReacquisition, TestProtocolLockLostWithoutReacquisition
// L13 one 2 s signal cleanup budget               TestSignalShutdownBudget, TestSignalHoldShutdownBudget (holdcli)
// L14 resign confirmation must match              TestProtocolElectionResignIdentityValidated
// L15 timeout, failover, signal contract          TestProtocolElectionFailover
// L16 authority disappears after leader           TestProtocolElectionAuthorityDisappears
// L17 same-token lock holds contend               TestProtocolLockSameTokenContend
// L18 usage errors cannot forge lines             TestExitCodesHelpAndUsage (holdcli)

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCoverageIndexNamesExistingTests: every test the index above cites
// exists (in hold/ or, marked (holdcli), in cmd/internal/holdcli/), so the index cannot
// silently point at a renamed or deleted test.
func TestCoverageIndexNamesExistingTests(t *testing.T) {
	self, err := os.ReadFile("protocol_index_test.go")
	require.NoError(t, err)
	index := string(self[:regexp.MustCompile(`\nimport \(`).FindIndex(self)[0]])
	defined := map[string]bool{}
	funcRe := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	for _, glob := range []string{"*_test.go", filepath.Join("..", "cmd", "internal", "holdcli", "*_test.go")} {
		files, err := filepath.Glob(glob)
		require.NoError(t, err)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, m := range funcRe.FindAllStringSubmatch(string(b), -1) {
				defined[m[1]] = true
			}
		}
	}
	cited := regexp.MustCompile(`\bTest[A-Z]\w+`).FindAllString(index, -1)
	require.Greater(t, len(cited), 80)
	for _, name := range cited {
		require.True(t, defined[name], "the coverage index cites %s, which does not exist", name)
	}
	for i := 1; i <= 13; i++ {
		require.Regexp(t, regexp.MustCompile(`(?m)^// `+itoa(uint64(i))+` +\S`), index, "\"Easy to miss\" item %d has no row", i)
	}
	for _, row := range []string{"0", "11", "20", "64", "70", "130"} {
		require.Regexp(t, regexp.MustCompile(`(?m)^// `+row+` +\S`), index, "\"Exit codes\" row %s has no row", row)
	}
	for i := 1; i <= 18; i++ {
		require.Regexp(t, regexp.MustCompile(`(?m)^// L`+itoa(uint64(i))+` +\S`), index, "L%d has no row", i)
	}
}
