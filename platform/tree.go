//go:build linux || darwin

package platform

import "slices"

// DescendantsIn returns, appended to dst, every process of the table all that
// is below root by parent links, breadth first. Root itself is not included,
// nor are the skipped pids and their subtrees.
func DescendantsIn(all []Proc, root int, dst []Proc, skip ...int) []Proc {
	children := make(map[int][]int, len(all))
	for i, p := range all {
		children[p.PPid] = append(children[p.PPid], i)
	}
	queue := append([]int(nil), children[root]...)
	for len(queue) > 0 {
		p := all[queue[0]]
		queue = queue[1:]
		if slices.Contains(skip, p.Pid) || p.Pid == root {
			continue
		}
		dst = append(dst, p)
		queue = append(queue, children[p.Pid]...)
	}
	return dst
}
