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
	// dirty lists the servers whose use changed since the tree was last
	// brought up to date: a change only marks its server, and a search
	// first climbs from each marked leaf (flush). Most placements find
	// their server without searching (Round.firstFit's hints), so several
	// changes to one server cost one climb.
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

// update marks server i as changed (its use changed); the tree reads it
// again before its next search.
func (x *freeIndex) update(i int) {
	if !x.isDirty[i] {
		x.isDirty[i] = true
		x.dirty = append(x.dirty, i)
	}
}

// flush re-reads the servers marked changed, each climbing only as far as
// a node's summary changes.
func (x *freeIndex) flush() {
	for _, i := range x.dirty {
		x.isDirty[i] = false
		k := x.size + i
		x.nodes[k] = x.leaf(x.r, i)
		if !x.isStale[i] {
			x.isStale[i] = true
			x.stale = append(x.stale, i)
		}
		for k /= 2; k >= 1; k /= 2 {
			n := merge(x.nodes[2*k], x.nodes[2*k+1])
			if n == x.nodes[k] {
				break
			}
			x.nodes[k] = n
		}
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
	x.flush()
	ok := func(k int) bool {
		n := &x.nodes[k]
		return n.maxGPUs >= gpus && n.cpus >= cpus && n.mem >= mem
	}
	k := x.size + from
	if from == 0 {
		k = 1 // the whole tree: no climb from the first leaf
	}
	for {
		// Move right, to the next subtree that may hold one.
		for !ok(k) {
			for k&1 == 1 {
				k >>= 1
			}
			if k == 0 {
				return -1
			}
			k++
		}
		// Descend to its leftmost leaf that is one.
		for k < x.size {
			switch {
			case ok(2 * k):
				k = 2 * k
			case ok(2*k + 1):
				k = 2*k + 1
			default:
				goto deadEnd
			}
		}
		return k - x.size
	deadEnd:
		// Neither child is one (the maxima came from different
		// servers): skip the subtree.
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
	x.flush()
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
