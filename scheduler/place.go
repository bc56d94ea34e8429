package scheduler

import "sort"

// fitCount is how many GPUs of server i could each take one GPU's share
// per, counted the way firstFit holds resources (so both agree on what
// fits).
func (r *Round) fitCount(i int, per PerGPU) int {
	f := r.Free(i)
	var holdCPU, holdMem float64
	k := 0
	for k < f.GPUs && f.CPUs-holdCPU >= per.CPUs && f.MemBytes-holdMem >= per.MemBytes {
		holdCPU += per.CPUs
		holdMem += per.MemBytes
		k++
	}
	return k
}

// placeRanked finds n GPUs at per-GPU share per, preferring servers by
// score (higher first; ties by server index): the best-scored server that
// holds all n GPUs if there is one (a consolidated placement), otherwise n
// GPUs taken server by server in score order, each server giving as many as
// fit. It changes nothing; ok is false when fewer than n GPUs fit anywhere,
// exactly when firstFit fails (each server's count does not depend on the
// order it is visited in).
func (r *Round) placeRanked(per PerGPU, n int, score func(i int, free Resources) float64) (servers []ServerAlloc, ok bool) {
	type cand struct {
		server, fit int
		score       float64
	}
	var cands []cand
	total := 0
	best := -1
	// Only servers that can take one GPU's share give any (fitCount > 0).
	for i := r.free.next(0, 1, per.CPUs, per.MemBytes); i >= 0; i = r.free.next(i+1, 1, per.CPUs, per.MemBytes) {
		k := r.fitCount(i, per)
		c := cand{server: i, fit: k, score: score(i, r.Free(i))}
		cands = append(cands, c)
		total += k
		if k >= n && (best < 0 || c.score > cands[best].score) {
			best = len(cands) - 1
		}
	}
	if total < n {
		return nil, false
	}
	alloc := func(server, gpus int) ServerAlloc {
		g := float64(gpus)
		return ServerAlloc{Server: server, GPUs: gpus, CPUs: per.CPUs * g, MemBytes: per.MemBytes * g}
	}
	if best >= 0 {
		return []ServerAlloc{alloc(cands[best].server, n)}, true
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].score > cands[b].score })
	for _, c := range cands {
		take := min(c.fit, n)
		servers = append(servers, alloc(c.server, take))
		n -= take
		if n == 0 {
			break
		}
	}
	// Keep server order ascending, as firstFit returns it.
	sort.Slice(servers, func(a, b int) bool { return servers[a].Server < servers[b].Server })
	return servers, true
}

// surplusScore ranks servers by how much CPU and memory they have beyond
// the GPU-proportional share of their free GPUs, each as a fraction of the
// server's size: (free CPUs − fair CPUs × free GPUs)/CPUs + (free memory −
// fair memory × free GPUs)/memory. Range about [−2, 2]. Placing the
// hungriest jobs first, each on the server with the most surplus, spreads
// them so that the jobs asking less than their share can fill the
// remaining GPUs (longest-processing-time-first balancing, Graham 1969).
func (r *Round) surplusScore(i int, free Resources) float64 {
	s := r.cluster.Servers[i]
	g := float64(free.GPUs)
	return (free.CPUs-r.shape.Fair.CPUs*g)/s.CPUs + (free.MemBytes-r.shape.Fair.MemBytes*g)/float64(s.MemBytes)
}
