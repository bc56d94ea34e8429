package gavel

import (
	"fmt"
	"strings"
)

// runnableOn says why no GPU type of cluster can run job type k (nil when
// one can): a type runs it when the throughputs give it a positive rate
// there and the type has at least k.ScaleFactor GPUs. A job no type can
// run would never finish: a run whose window holds it would never end
// (Gavel's simulator loops forever), so it is refused before the run.
func runnableOn(cluster ClusterSpec, tp *Throughputs, k JobType) error {
	var why []string
	for i, t := range cluster.Types {
		if cluster.GPUs[i] == 0 {
			continue
		}
		v, ok := tp.Isolated[t][k]
		switch {
		case !ok:
			return fmt.Errorf("throughputs have no entry for %s on %q", k, t)
		case !(v > 0):
			why = append(why, fmt.Sprintf("%s: throughput %g", t, v))
		case k.ScaleFactor > cluster.GPUs[i]:
			why = append(why, fmt.Sprintf("%s: %d GPUs", t, cluster.GPUs[i]))
		default:
			return nil
		}
	}
	return fmt.Errorf("no GPU type of the cluster can run %s (%s)", k, strings.Join(why, "; "))
}

// generatorDraws lists the job types Gavel's generator can draw with cfg:
// every template alone, and the distributed ones at 2, 4 and 8 GPUs with
// MultiGPU (Generator.job).
func generatorDraws(cfg GeneratorConfig) []JobType {
	var out []JobType
	for _, t := range Templates {
		for _, sf := range []int{1, 2, 4, 8} {
			if sf > 1 && (!cfg.MultiGPU || !t.Distributed) {
				continue
			}
			out = append(out, JobType{Model: t.Model, ScaleFactor: sf})
		}
	}
	return out
}

// checkRunnable refuses a workload with a job that no GPU type of the
// cluster can run: a trace's job by its number, a generator's job type by
// the draw that would bring it.
func checkRunnable(cluster ClusterSpec, tp *Throughputs, w Workload, gen *GeneratorConfig) error {
	if w.Trace != nil {
		seen := map[JobType]error{}
		for i, j := range w.Trace {
			k := j.Key()
			err, ok := seen[k]
			if !ok {
				err = runnableOn(cluster, tp, k)
				seen[k] = err
			}
			if err != nil {
				return fmt.Errorf("trace job %d: %w", i, err)
			}
		}
		return nil
	}
	if gen == nil {
		return nil
	}
	for _, k := range generatorDraws(*gen) {
		if err := runnableOn(cluster, tp, k); err != nil {
			return fmt.Errorf("generator (it draws %s): %w", k, err)
		}
	}
	return nil
}
