package profiler

import (
	"errors"
	"fmt"
	"math"
)

// DefaultWorkingSetBytes is the room the default memory axis leaves above
// the dataset for the job's own memory (model, loader buffers).
const DefaultWorkingSetBytes = 64 << 20

// DefaultMemLimits is the memory axis of a sweep given none: DefaultMemAxis
// around the size of the dataset under dataDir, with DefaultWorkingSetBytes
// for the job's own memory.
func DefaultMemLimits(dataDir string) ([]int64, error) {
	datasetBytes, _, err := DatasetSize(dataDir)
	if err != nil {
		return nil, err
	}
	return DefaultMemAxis(datasetBytes, DefaultWorkingSetBytes), nil
}

// CPUsWithinHost refuses a CPU count whose point cannot run on this host:
// a point pins ceil(cpus) of the online CPUs (hostCPUs <= 0: unknown,
// nothing is refused).
func CPUsWithinHost(cpus []float64, hostCPUs int) error {
	if hostCPUs <= 0 {
		return nil
	}
	for _, v := range cpus {
		if need := math.Ceil(v); need > float64(hostCPUs) {
			msg := fmt.Sprintf("%g cores asked but this host has %d online CPUs", v, hostCPUs)
			if need != v {
				msg += fmt.Sprintf(" (a point pins ceil(cpus) = %g cores)", need)
			}
			return errors.New(msg)
		}
	}
	return nil
}
