package platform

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Calls and types the job-object layer needs that golang.org/x/sys/windows
// does not have (read at v0.50.0). They are bound lazily so a missing export
// is an error at the call, not a crash at start-up.
var (
	modkernel32 = windows.NewLazySystemDLL("kernel32.dll")
	modntdll    = windows.NewLazySystemDLL("ntdll.dll")

	// x/sys has no IsProcessInJob (it has every other job call).
	procIsProcessInJob = modkernel32.NewProc("IsProcessInJob")
	// x/sys has SetHandleInformation but not its getter; Start needs the old
	// flags to restore them after handing a handle to a child.
	procGetHandleInformation = modkernel32.NewProc("GetHandleInformation")
	// Exported only by Wine's ntdll: the one reliable way to know that job
	// limit queries are Wine's zero-filling stub (see WineVersion).
	procWineGetVersion = modntdll.NewProc("wine_get_version")
)

// x/sys lacks the completion-port association record, the accounting
// record and the job-list process attribute.

// procThreadAttributeJobList (Windows 10+) makes CreateProcess put the new
// process into the listed jobs before its first thread runs.
const procThreadAttributeJobList = 0x0002000D

type jobObjectAssociateCompletionPort struct {
	CompletionKey  uintptr
	CompletionPort windows.Handle
}

type jobObjectBasicAccountingInformation struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// isProcessInJob reports whether process is in job; a zero job means "in any
// job".
func isProcessInJob(process, job windows.Handle) (bool, error) {
	if err := procIsProcessInJob.Find(); err != nil {
		return false, fmt.Errorf("IsProcessInJob: %w", err)
	}
	var in int32
	r, _, e := procIsProcessInJob.Call(uintptr(process), uintptr(job), uintptr(unsafe.Pointer(&in)))
	if r == 0 {
		return false, fmt.Errorf("IsProcessInJob: %w", e)
	}
	return in != 0, nil
}

func getHandleInformation(h windows.Handle) (uint32, error) {
	if err := procGetHandleInformation.Find(); err != nil {
		return 0, fmt.Errorf("GetHandleInformation: %w", err)
	}
	var flags uint32
	r, _, e := procGetHandleInformation.Call(uintptr(h), uintptr(unsafe.Pointer(&flags)))
	if r == 0 {
		return 0, fmt.Errorf("GetHandleInformation: %w", e)
	}
	return flags, nil
}

// WineVersion reports whether this program runs under Wine, and which
// version. It exists because Wine differs from Windows in ways a containment
// layer must not paper over: Wine 8's QueryInformationJobObject returns
// zeroed limit records, and its job objects keep no active-process limit. The
// job layer uses it to say "unverified" instead of "verified" there, and
// tests use it to name why they skip.
func WineVersion() (string, bool) {
	if procWineGetVersion.Find() != nil {
		return "", false
	}
	r, _, _ := procWineGetVersion.Call()
	if r == 0 {
		return "unknown", true
	}
	// r is a pointer to a static string inside Wine's ntdll, never Go
	// memory; reading it through &r keeps vet's uintptr rule satisfied.
	return windows.BytePtrToString(*(**byte)(unsafe.Pointer(&r))), true
}
