package platform

import "errors"

// All appends every process in /proc to dst, one Stat each. A process that
// exits during the scan is simply absent. It is what the macOS reader offers
// in one sysctl, so code that follows processes beyond parent links (contain's
// process families) runs and is tested on Linux too.
func (r *ProcReader) All(dst []Proc) ([]Proc, error) {
	pids, err := r.Pids(make([]int, 0, 512))
	if err != nil {
		return dst, err
	}
	for _, pid := range pids {
		p, err := r.Stat(pid)
		if err != nil {
			if errors.Is(err, ErrNoProcess) {
				continue
			}
			return dst, err
		}
		dst = append(dst, p)
	}
	return dst, nil
}
