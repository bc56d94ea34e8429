package scheduler

import "math"

// freeIndex is a segment tree over a round's servers, in index order, that
// finds the next server with room without walking the full ones: first fit
// on a 10,000-GPU cluster otherwise visits the ~1,000 servers already full
// for every job it places. Each node holds, over the servers below it that
// have a free GPU, the most and the fewest free GPUs, the most free CPUs
// and the most free memory. A leaf holds its server's free resources
// exactly as Round.Free computes them, so a search selects the servers a
// walk in index order comparing Round.Free would select, in the same order.
type freeIndex struct {
	r     *Round
	size  int        // leaves: a power of two ≥ the number of servers
	nodes []freeNode // 1 is the root, k's children are 2k and 2k+1, leaf i is size+i
	// A take only marks its server in dirty: a leaf and the nodes above
	// it may then hold more than is free, never less (resources are only
	// taken between gives, and a give updates the tree at once), so a node
	// that rules a subtree out is still right. next checks the leaf it
	// finds against what is free and, when it no longer fits, corrects it
	// and the nodes above and searches on: a server is re-read when a
	// search reaches it, not at every take (a round takes about eight
	// times per server, and most placements need no search: the round's
	// hints). fewestFree, which needs exact counts, re-reads the marked
	// servers first (flush).
	dirty   []int
	isDirty []bool
	// fewest is a second tree, of the fewest free GPUs (at least one)
	// below each node, math.MaxInt32 if none. It is brought up to date
	// only when read (fewestFree, in TUNE's revert step): the server
	// being filled is the cluster's fewest, so every placement would
	// otherwise climb to the root. stale lists the leaves changed since.
	fewest  []int32
	stale   []int
	isStale []bool
}

type freeNode struct {
	cpus, mem float64 // most free CPUs and memory among servers with a free GPU; −Inf if none
	maxGPUs   int     // most free GPUs; 0 if no server has one
}

var noFree = freeNode{cpus: math.Inf(-1), mem: math.Inf(-1)}

func newFreeIndex(r *Round) *freeIndex {
	n := len(r.cluster.Servers)
	size := 1
	for size < n {
		size *= 2
	}
	x := &freeIndex{r: r, size: size, nodes: make([]freeNode, 2*size), fewest: make([]int32, 2*size),
		isStale: make([]bool, size), isDirty: make([]bool, size)}
	x.rebuild()
	return x
}

// rebuild re-reads every server.
func (x *freeIndex) rebuild() {
	r := x.r
	for i := range x.size {
		x.nodes[x.size+i] = x.leaf(r, i)
		x.fewest[x.size+i] = leastOf(x.nodes[x.size+i])
	}
	for k := x.size - 1; k >= 1; k-- {
		x.nodes[k] = merge(x.nodes[2*k], x.nodes[2*k+1])
		x.fewest[k] = min(x.fewest[2*k], x.fewest[2*k+1])
	}
	for _, i := range x.stale {
		x.isStale[i] = false
	}
	x.stale = x.stale[:0]
	for _, i := range x.dirty {
		x.isDirty[i] = false
	}
	x.dirty = x.dirty[:0]
}

// leastOf is a leaf's entry in the fewest tree.
func leastOf(n freeNode) int32 {
	if n.maxGPUs <= 0 {
		return math.MaxInt32
	}
	return int32(min(n.maxGPUs, math.MaxInt32))
}

// leaf is server i's node (a padding leaf, i ≥ servers, holds no free GPU).
func (x *freeIndex) leaf(r *Round, i int) freeNode {
	if i >= len(r.cluster.Servers) {
		return noFree
	}
	f := r.Free(i)
	if f.GPUs <= 0 {
		return noFree
	}
	return freeNode{cpus: f.CPUs, mem: f.MemBytes, maxGPUs: f.GPUs}
}

func merge(a, b freeNode) freeNode {
	return freeNode{cpus: max(a.cpus, b.cpus), mem: max(a.mem, b.mem), maxGPUs: max(a.maxGPUs, b.maxGPUs)}
}

// taken marks server i after resources were taken from it: the tree may
// now hold more than it has free, which searches correct as they meet it.
func (x *freeIndex) taken(i int) {
	if !x.isDirty[i] {
		x.isDirty[i] = true
		x.dirty = append(x.dirty, i)
	}
}

// given re-reads server i after resources were given back to it: the tree
// may never hold less than is free.
func (x *freeIndex) given(i int) {
	x.taken(i)
	x.reread(i)
}

// reread sets server i's leaf to what it has free and climbs as far as a
// node's summary changes; the fewest tree is marked for it.
func (x *freeIndex) reread(i int) {
	k := x.size + i
	x.nodes[k] = x.leaf(x.r, i)
	if !x.isStale[i] {
		x.isStale[i] = true
		x.stale = append(x.stale, i)
	}
	x.climb(k)
}

// climb recomputes the nodes above node k from their children, as far as
// one changes.
func (x *freeIndex) climb(k int) {
	for k /= 2; k >= 1; k /= 2 {
		n := merge(x.nodes[2*k], x.nodes[2*k+1])
		if n == x.nodes[k] {
			return
		}
		x.nodes[k] = n
	}
}

// flush re-reads every marked server.
func (x *freeIndex) flush() {
	for _, i := range x.dirty {
		x.isDirty[i] = false
		x.reread(i)
	}
	x.dirty = x.dirty[:0]
}

// next returns the first server at index ≥ from with at least gpus
// (≥ 1) free GPUs, at least cpus free CPUs and at least mem free memory,
// or −1. A node is entered only when its maxima allow such a server, so a
// search costs O(log servers) unless many servers have enough of one
// resource and too little of another (then it backtracks past them).
func (x *freeIndex) next(from, gpus int, cpus, mem float64) int {
	if from >= x.size {
		return -1
	}
	ok := func(n *freeNode) bool {
		return n.maxGPUs >= gpus && n.cpus >= cpus && n.mem >= mem
	}
	k := x.size + from
	if from == 0 {
		k = 1 // the whole tree: no climb from the first leaf
	}
	for {
		// Move right, to the next subtree that may hold one.
		for !ok(&x.nodes[k]) {
			for k&1 == 1 {
				k >>= 1
			}
			if k == 0 {
				return -1
			}
			k++
		}
		// Descend to its leftmost leaf that may be one.
		for k < x.size {
			switch {
			case ok(&x.nodes[2*k]):
				k = 2 * k
			case ok(&x.nodes[2*k+1]):
				k = 2*k + 1
			default:
				// Neither child is one (the maxima came from
				// different servers, or the node held more than
				// its children now do): correct it, skip it.
				x.nodes[k] = merge(x.nodes[2*k], x.nodes[2*k+1])
				x.climb(k)
				goto skip
			}
		}
		if i := k - x.size; i < len(x.r.cluster.Servers) {
			if n := x.leaf(x.r, i); ok(&n) {
				return i
			}
			x.reread(i) // it held more than is free
		}
	skip:
		for k&1 == 1 {
			k >>= 1
		}
		if k == 0 {
			return -1
		}
		k++
	}
}

// nextWithFree returns the first server at index ≥ from with a free GPU,
// or −1.
func (x *freeIndex) nextWithFree(from int) int {
	return x.next(from, 1, math.Inf(-1), math.Inf(-1))
}

// fewestFree returns the server with the fewest free GPUs (at least one),
// the lowest index among equals, or −1.
func (x *freeIndex) fewestFree() int {
	x.flush() // exact counts
	for _, i := range x.stale {
		x.isStale[i] = false
		k := x.size + i
		x.fewest[k] = leastOf(x.nodes[k])
		for k /= 2; k >= 1; k /= 2 {
			m := min(x.fewest[2*k], x.fewest[2*k+1])
			if m == x.fewest[k] {
				break
			}
			x.fewest[k] = m
		}
	}
	x.stale = x.stale[:0]
	least := x.fewest[1]
	if least == math.MaxInt32 {
		return -1
	}
	k := 1
	for k < x.size {
		if x.fewest[2*k] <= least {
			k = 2 * k
		} else {
			k = 2*k + 1
		}
	}
	return k - x.size
}
