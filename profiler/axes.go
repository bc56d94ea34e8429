package profiler

import "fmt"

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

// CPUsWithinHost refuses a CPU count above the host's logical CPUs
// (hostCPUs <= 0: unknown, nothing is refused).
func CPUsWithinHost(cpus []float64, hostCPUs int) error {
	maxC := float64(hostCPUs)
	if maxC <= 0 {
		return nil
	}
	for _, v := range cpus {
		if v > maxC {
			return fmt.Errorf("%g cores asked but this host has %g", v, maxC)
		}
	}
	return nil
}
