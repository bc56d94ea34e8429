package pytorch

import (
	"embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// ProbeEnv* name the environment variables that configure the injected
// DataLoader probe (probe/synergy_probe.py; docs/job-contract.md, "For the
// profiler (Go side)").
const (
	ProbeEnvReport        = "SYNERGY_PROBE_REPORT"
	ProbeEnvMaxIterations = "SYNERGY_PROBE_MAX_ITERATIONS"
	ProbeEnvWorkers       = "SYNERGY_PROBE_WORKERS"
	ProbeEnvLoader        = "SYNERGY_PROBE_LOADER"
	ProbeEnvStepS         = "SYNERGY_PROBE_STEP_S"
	ProbeEnvEmulateGPU    = "SYNERGY_PROBE_EMULATE_GPU"
	ProbeEnvModel         = "SYNERGY_PROBE_MODEL"
	ProbeEnvReplay        = "SYNERGY_PROBE_REPLAY"
	ProbeEnvSwitch        = "SYNERGY_PROBE"
	// ProbeExitConfig is the exit status of a job whose SYNERGY_PROBE_*
	// setting the probe refused at start-up.
	ProbeExitConfig = 2
)

//go:embed probe/sitecustomize.py probe/synergy_probe.py synergy_metrics.py
var probeFS embed.FS

// probeFiles are the files of the probe directory: the probe's two and the
// helper it loads from beside itself.
var probeFiles = []string{"probe/sitecustomize.py", "probe/synergy_probe.py", "synergy_metrics.py"}

// WriteProbe writes the probe directory (sitecustomize.py, synergy_probe.py
// and synergy_metrics.py, flat) into dir, which must exist, so that a binary
// installed anywhere can inject the probe: put dir first on the job's
// PYTHONPATH (in a container: mount it read-only and put the mount point
// first). Files are written 0644 and replace any there.
func WriteProbe(dir string) error {
	for _, f := range probeFiles {
		data, err := probeFS.ReadFile(f)
		if err != nil {
			return fmt.Errorf("write probe: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, path.Base(f)), data, 0o644); err != nil {
			return fmt.Errorf("write probe: %w", err)
		}
	}
	return nil
}
