package sensitivity

import (
	"math"
	"sort"
)

// BaselineMinIO names DS-Analyzer's what-if formula, the baseline the fit is
// compared with.
const BaselineMinIO = "minio-formula"

// MinIOPredict is DS-Analyzer's what-if formula (the baseline), for the
// same cells: with the CPU-bound rate Q(c) read off the measured CPU points
// (linear between them, flat past the ends, as Synergy's profiler measures
// every CPU count), and a MinIO cache that hits exactly the cached fraction
// f = clamp((m − anon) / D, 0, 1) of the dataset every epoch,
//
//	fetch time per epoch = f·D / B_mem + (1 − f)·D / B_disk
//
// with B_mem ≫ B_disk, the samples/s is min(Q(c), B_disk / (bytes_per_sample
// · (1 − f))). B_disk is host.read_limit_bytes_per_s, else
// host.cold_read_mb_per_s. ok is false when p has no successful CPU point,
// or the dataset or bandwidth is unknown at a limited memory.
func MinIOPredict(p *Profile, cpus float64, memLimitBytes int64) (float64, bool) {
	var pts []xy // x = cpus
	cells := fitCellsOf(p, nil)
	anon := anonBytes(cells)
	for _, c := range cells {
		if c.Failure == nil && Unlimited(c.MemLimitBytes) {
			pts = append(pts, xy{x: c.CPUs, v: c.SamplesPerS})
		}
	}
	if len(pts) == 0 {
		return 0, false
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
	q, _ := interpXY(pts, cpus)
	if Unlimited(memLimitBytes) {
		return q, true
	}
	D, files := float64(p.Host.DatasetBytes), p.Host.DatasetFiles
	bw := float64(p.Host.ReadLimitBytesPS)
	if bw <= 0 {
		bw = p.Host.ColdReadMBPerS * 1e6
	}
	if D <= 0 || files <= 0 || bw <= 0 {
		return 0, false
	}
	fr := clamp((float64(memLimitBytes)-anon)/D, 0, 1)
	if fr >= 1 {
		return q, true
	}
	fetch := bw / (D / float64(files) * (1 - fr))
	return math.Min(q, fetch), true
}
