package joint

import (
	"github.com/synergy-sched/synergy/models/zoo"
	"github.com/synergy-sched/synergy/scheduler/gavel/lp"
)

// Grant is what one job holds on one type for a round, time-averaged: GPU (the LP's time
// fraction of one GPU) and CPUs and GB per GPU it runs with.
type Grant struct {
	GPU, CPUsPerGPU, MemGBPerGPU float64
}

// Allocate returns X[m][j], the time fraction of job m on type j, under policy.
func Allocate(policy string, cluster []GPUType, models []zoo.Model) ([][]float64, error) {
	if policy == Synergy {
		return agnostic(cluster, len(models)), nil
	}
	p := lp.Problem{}
	for _, t := range cluster {
		p.Types = append(p.Types, t.Name)
		p.Workers = append(p.Workers, t.GPUs)
	}
	for i, m := range models {
		row := make([]float64, len(cluster))
		for j, t := range cluster {
			var err error
			if policy == Joint {
				row[j], err = JointThroughput(t, m)
			} else {
				row[j], err = GPUSpeed(t, m)
			}
			if err != nil {
				return nil, err
			}
		}
		p.Jobs = append(p.Jobs, lp.Job{ID: i, Throughput: row, ScaleFactor: 1, PriorityWeight: 1, RemainingSteps: 1})
	}
	x, err := lp.Solve(lp.MaxMinFairnessPerf, p, lp.Options{})
	return [][]float64(x), err
}

// agnostic is a type-blind scheduler's fluid allocation: every job the same share of the
// cluster's GPUs, spread over types in proportion to their GPU counts (a type-blind placer
// lands on each type as often as the type is common).
func agnostic(cluster []GPUType, n int) [][]float64 {
	total := 0
	for _, t := range cluster {
		total += t.GPUs
	}
	share := 1.0
	if n > total {
		share = float64(total) / float64(n)
	}
	x := make([][]float64, n)
	for i := range x {
		x[i] = make([]float64, len(cluster))
		for j, t := range cluster {
			x[i][j] = share * float64(t.GPUs) / float64(total)
		}
	}
	return x
}

// Place gives each job its CPUs and memory on type t for GPU fractions col. proportional:
// every job the type's per-GPU CPUs and memory (Gavel). Otherwise a fluid Synergy-TUNE: every
// job first gets min(ideal, proportional) in each resource, then, in job order, its ideal
// where the type's pool still holds it; the pool is the type's GPUs times its per-GPU CPUs and GB.
func Place(t GPUType, col []float64, models []zoo.Model, proportional bool) []Grant {
	g := make([]Grant, len(models))
	usedC, usedM := 0.0, 0.0
	for i, m := range models {
		g[i] = Grant{GPU: col[i], CPUsPerGPU: t.CPUsPerGPU, MemGBPerGPU: t.MemGBPerGPU}
		if !proportional {
			g[i].CPUsPerGPU = min(t.CPUsPerGPU, m.IdealCPUsPerGPU)
			g[i].MemGBPerGPU = min(t.MemGBPerGPU, idealGB(m))
		}
		usedC += col[i] * g[i].CPUsPerGPU
		usedM += col[i] * g[i].MemGBPerGPU
	}
	if proportional {
		return g
	}
	poolC, poolM := float64(t.GPUs)*t.CPUsPerGPU, float64(t.GPUs)*t.MemGBPerGPU
	for i, m := range models {
		dc := col[i] * (m.IdealCPUsPerGPU - g[i].CPUsPerGPU)
		dm := col[i] * (idealGB(m) - g[i].MemGBPerGPU)
		if col[i] <= 0 || (dc <= 0 && dm <= 0) || usedC+dc > poolC+1e-9 || usedM+dm > poolM+1e-9 {
			continue
		}
		g[i].CPUsPerGPU, g[i].MemGBPerGPU = m.IdealCPUsPerGPU, idealGB(m)
		usedC += dc
		usedM += dm
	}
	return g
}

func idealGB(m zoo.Model) float64 { return float64(m.IdealMemBytesPerGPU) / zoo.GB }

// rates returns each running job's steps per second for one round under policy.
func rates(policy string, cluster []GPUType, run []active) ([]float64, error) {
	models := make([]zoo.Model, len(run))
	for i, a := range run {
		models[i] = a.job.Model
	}
	x, err := Allocate(policy, cluster, models)
	if err != nil {
		return nil, err
	}
	rates := make([]float64, len(run))
	col := make([]float64, len(run))
	for j, t := range cluster {
		for i := range run {
			col[i] = x[i][j]
		}
		for i, g := range Place(t, col, models, policy == Gavel) {
			sp, err := GPUSpeed(t, models[i])
			if err != nil {
				return nil, err
			}
			rates[i] += g.GPU * sp * Sensitivity(models[i], g.CPUsPerGPU, g.MemGBPerGPU)
		}
	}
	return rates, nil
}
