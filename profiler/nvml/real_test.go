package nvml

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/sensitivity"
	"github.com/synergy-sched/synergy/sensitivity/sensitivitytest"
)

// TestDetect_ThisMachine runs Detect against whatever this machine has (the
// system libnvidia-ml through go-nvml with cgo, the stub without) and checks
// that the mode is reported honestly: "nvml" only with devices and an open
// client, "none" with a reason and no client. It must not crash on a machine
// without the library.
func TestDetect_ThisMachine(t *testing.T) {
	det, c := Detect()
	t.Logf("gpu mode %q: %d devices, driver %q, reason %q", det.Mode, len(det.Devices), det.DriverVersion, det.Reason)
	switch det.Mode {
	case sensitivity.GPUModeNVML:
		if c == nil || len(det.Devices) == 0 {
			t.Fatalf("mode nvml without a client or devices: %+v", det)
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	case sensitivity.GPUModeNone:
		if c != nil {
			t.Error("mode none came with a client")
		}
		if det.Reason == "" {
			t.Error("mode none without a reason")
		}
		if !cgoEnabled && (!errors.Is(det.Err, ErrUnavailableLib) || !strings.Contains(det.Reason, "built without cgo")) {
			t.Errorf("a build without cgo must say so: %+v", det)
		}
		p := sensitivitytest.Demo(t.TempDir()) // a valid profile, with this machine's gpu block
		p.GPU = det.GPUInfo()
		if err := p.Validate(); err != nil {
			t.Errorf("gpu block does not validate: %v", err)
		}
	default:
		t.Fatalf("mode %q is neither nvml nor none", det.Mode)
	}
}

// TestSampler_RealGPU samples every GPU of this machine once.
func TestSampler_RealGPU(t *testing.T) {
	det, c := Detect()
	if c == nil {
		testreq.Skip(t, "nvml", det.Reason)
	}
	defer c.Close()
	var rec sample.Record
	if err := NewSampler(c, nil, nil).Sample(time.Now(), &rec); err != nil {
		t.Fatal(err)
	}
	for i := range det.Devices {
		for _, s := range []string{"_mem_used_bytes", "_util_pct"} {
			if _, ok := rec.Get("gpu" + strconv.Itoa(i) + s); !ok {
				t.Errorf("gpu%d%s missing on a real GPU", i, s)
			}
		}
	}
	t.Logf("record: %v", rec.Values)
}
