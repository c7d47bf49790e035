package contain

// claimWorkerUser: Windows has no --worker-user, so nothing to claim.
func claimWorkerUser(*WorkerUser) error { return nil }

// release: nothing was claimed.
func (Isolation) release() {}
