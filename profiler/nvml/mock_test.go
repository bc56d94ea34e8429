//go:build cgo

package nvml

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/sensitivity"
)

// These tests drive the real raw layer (nvmlDriver) against go-nvml's own
// DGX H100 mock server (pkg/nvml/mock/dgxh100, shipped by go-nvml v0.13.4-1).
// The mock answers identity calls itself; the telemetry calls the sampler
// makes are scripted per test on each mock device.

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// newH100s returns a mock DGX with n H100s whose device i reports GPU
// utilisation 10·i %, memory utilisation 5·i %, i GiB used, SM clock
// 1000+i MHz, power 100 W + i W, and no process samples.
func newH100s(n int) *server.Server {
	s := dgxh100.NewWithGPUs(gpus.Multiple(n, gpus.H100_SXM5_80GB)...)
	for i, dev := range s.Devices {
		d := dev.(*server.Device)
		d.MemoryInfo.Used = uint64(i) << 30
		d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
			return gonvml.Utilization{Gpu: uint32(10 * i), Memory: uint32(5 * i)}, gonvml.SUCCESS
		}
		d.GetClockInfoFunc = func(ct gonvml.ClockType) (uint32, gonvml.Return) {
			if ct != gonvml.CLOCK_SM {
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			return uint32(1000 + i), gonvml.SUCCESS
		}
		d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return uint32(100000 + 1000*i), gonvml.SUCCESS }
		d.GetProcessUtilizationFunc = func(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
			return nil, gonvml.ERROR_NOT_FOUND
		}
	}
	return s
}

func device(s *server.Server, i int) *server.Device { return s.Devices[i].(*server.Device) }

// forbidAfterInit makes every call the client could make after Init panic,
// so a test fails if anything is called after a failed Init.
func forbidAfterInit(t *testing.T, s *server.Server) {
	s.ShutdownFunc = func() gonvml.Return { panic("nvmlShutdown called after a failed Init") }
	s.DeviceGetCountFunc = func() (int, gonvml.Return) { panic("nvmlDeviceGetCount called after a failed Init") }
	s.DeviceGetHandleByIndexFunc = func(int) (gonvml.Device, gonvml.Return) {
		panic("nvmlDeviceGetHandleByIndex called after a failed Init")
	}
	s.SystemGetDriverVersionFunc = func() (string, gonvml.Return) {
		panic("nvmlSystemGetDriverVersion called after a failed Init")
	}
}

func TestDetect_InitFailure(t *testing.T) {
	tests := []struct {
		name       string
		ret        gonvml.Return
		unavail    bool   // errors.Is(ErrUnavailableLib)
		wantReason string // in Reason
	}{
		{"no library", gonvml.ERROR_LIBRARY_NOT_FOUND, true, "nvml library unavailable: libnvidia-ml.so.1 could not be loaded"},
		{"driver not loaded", gonvml.ERROR_DRIVER_NOT_LOADED, false, "ERROR_DRIVER_NOT_LOADED"},
		{"no permission", gonvml.ERROR_NO_PERMISSION, false, "ERROR_NO_PERMISSION"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newH100s(2)
			s.InitFunc = func() gonvml.Return { return tt.ret }
			forbidAfterInit(t, s)
			det, c := detect(newDriver(s))
			if c != nil {
				t.Fatal("a client came back from a failed Init")
			}
			if det.Mode != sensitivity.GPUModeNone || !strings.Contains(det.Reason, tt.wantReason) {
				t.Errorf("detection = %+v, want mode none with reason containing %q", det, tt.wantReason)
			}
			if errors.Is(det.Err, ErrUnavailableLib) != tt.unavail {
				t.Errorf("errors.Is(%v, ErrUnavailableLib) = %v, want %v", det.Err, !tt.unavail, tt.unavail)
			}
			if n := len(s.InitCalls()); n != 1 {
				t.Errorf("Init called %d times, want 1", n)
			}
			g := det.GPUInfo()
			if g.Mode != sensitivity.GPUModeNone || g.Count != 0 || g.Note != det.Reason {
				t.Errorf("gpu info = %+v", g)
			}
			if err := det.RequireGPU(); err == nil || !strings.Contains(err.Error(), "no usable GPU") || !strings.Contains(err.Error(), tt.wantReason) {
				t.Errorf("RequireGPU = %v, want an error saying there is no GPU, and why", err)
			}
		})
	}
}

func TestDetect_NoDevices(t *testing.T) {
	s := newH100s(0)
	det, c := detect(newDriver(s))
	if c != nil {
		t.Error("a client came back with no device")
	}
	if det.Mode != sensitivity.GPUModeNone || !strings.Contains(det.Reason, "found no GPU") || det.DriverVersion != "550.54.15" {
		t.Errorf("detection = %+v, want mode none, no GPU, driver 550.54.15", det)
	}
	if n := len(s.ShutdownCalls()); n != 1 {
		t.Errorf("shutdown called %d times after finding no GPU, want 1", n)
	}
	if det.RequireGPU() == nil {
		t.Error("RequireGPU passed with no GPU")
	}
}

func TestDetect_SeveralGPUs(t *testing.T) {
	s := newH100s(8)
	det, c := detect(newDriver(s))
	if c == nil {
		t.Fatalf("no client: %+v", det)
	}
	defer c.Close()
	if det.Mode != sensitivity.GPUModeNVML || len(det.Devices) != 8 || det.RequireGPU() != nil {
		t.Fatalf("detection = %+v, want mode nvml with 8 devices", det)
	}
	for i, d := range det.Devices {
		if d.Index != i || d.Name != "NVIDIA H100 80GB HBM3" || d.MemTotalBytes != 81920<<20 || !strings.HasPrefix(d.UUID, "GPU-") {
			t.Errorf("device %d = %+v", i, d)
		}
	}
	if g := det.GPUInfo(); g.Count != 8 || len(g.Devices) != 8 || g.Devices[7] != "NVIDIA H100 80GB HBM3" {
		t.Errorf("gpu info = %+v", g)
	}
}

func TestSampler_SeveralGPUs(t *testing.T) {
	s := newH100s(8)
	c, err := open(newDriver(s))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The job uses GPUs 2 and 5 only.
	sm := NewSampler(c, []int{2, 5}, nil)
	var rec sample.Record
	if err := sm.Sample(t0, &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"gpu2_util_pct": 20, "gpu2_mem_util_pct": 10, "gpu2_mem_used_bytes": 2 << 30, "gpu2_sm_clock_mhz": 1002, "gpu2_power_w": 102,
		"gpu5_util_pct": 50, "gpu5_mem_util_pct": 25, "gpu5_mem_used_bytes": 5 << 30, "gpu5_sm_clock_mhz": 1005, "gpu5_power_w": 105,
		// NOT_FOUND = supported but no process sampled: 0 processes, 0 %.
		"gpu2_procs": 0, "gpu2_job_sm_util_pct": 0, "gpu2_job_mem_util_pct": 0,
		"gpu5_procs": 0, "gpu5_job_sm_util_pct": 0, "gpu5_job_mem_util_pct": 0,
	}
	if fmt.Sprint(rec.Values) != fmt.Sprint(want) {
		t.Errorf("record =\n%v\nwant\n%v", rec.Values, want)
	}
	// The other GPUs were not touched.
	if n := len(device(s, 0).GetUtilizationRatesCalls()); n != 0 {
		t.Errorf("gpu 0 sampled %d times though not in use", n)
	}
}

func TestSampler_NotSupportedFieldIsAbsent(t *testing.T) {
	s := newH100s(2)
	d1 := device(s, 1)
	d1.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	d1.GetProcessUtilizationFunc = func(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		return nil, gonvml.ERROR_NOT_SUPPORTED
	}
	c, err := open(newDriver(s))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var rec sample.Record
	if err := NewSampler(c, nil, nil).Sample(t0, &rec); err != nil {
		t.Fatalf("NOT_SUPPORTED gave an error: %v", err)
	}
	for _, name := range []string{"gpu1_power_w", "gpu1_procs", "gpu1_job_sm_util_pct"} {
		if _, ok := rec.Get(name); ok {
			t.Errorf("%s present though the device does not support it", name)
		}
	}
	for name, want := range map[string]float64{"gpu1_util_pct": 10, "gpu1_sm_clock_mhz": 1001, "gpu0_power_w": 100, "gpu0_procs": 0} {
		if v, ok := rec.Get(name); !ok || v != want {
			t.Errorf("%s = %v, %v; want %v", name, v, ok, want)
		}
	}
}

func TestSampler_FieldErrorKeepsTheRest(t *testing.T) {
	s := newH100s(2)
	device(s, 1).GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
		return gonvml.Utilization{}, gonvml.ERROR_GPU_IS_LOST
	}
	c, err := open(newDriver(s))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var rec sample.Record
	err = NewSampler(c, nil, nil).Sample(t0, &rec)
	if err == nil || !strings.Contains(err.Error(), "gpu 1") || !strings.Contains(err.Error(), "ERROR_GPU_IS_LOST") {
		t.Errorf("err = %v, want it to name gpu 1 and ERROR_GPU_IS_LOST", err)
	}
	if _, ok := rec.Get("gpu1_util_pct"); ok {
		t.Error("gpu1_util_pct present after its call failed")
	}
	for _, name := range []string{"gpu1_power_w", "gpu0_util_pct"} {
		if _, ok := rec.Get(name); !ok {
			t.Errorf("%s lost with the failing field", name)
		}
	}
}

func TestSampler_ProcessUtilization(t *testing.T) {
	s := newH100s(1)
	var since []uint64
	device(s, 0).GetProcessUtilizationFunc = func(ts uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		since = append(since, ts)
		if ts >= 20 {
			return nil, gonvml.ERROR_NOT_FOUND
		}
		return []gonvml.ProcessUtilizationSample{
			{Pid: 100, TimeStamp: 10, SmUtil: 30, MemUtil: 10},
			{Pid: 200, TimeStamp: 15, SmUtil: 20, MemUtil: 5},
			{Pid: 100, TimeStamp: 20, SmUtil: 40, MemUtil: 12},
		}, gonvml.SUCCESS
	}
	c, err := open(newDriver(s))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sm := NewSampler(c, nil, func() []int { return []int{100, 300} })
	var r1, r2 sample.Record
	if err := sm.Sample(t0, &r1); err != nil {
		t.Fatal(err)
	}
	// Job = PIDs 100 and 300; 100's newest sample (ts 20) counts: 40 % SM,
	// 12 % memory; 200 is not the job's. Two processes were seen.
	for name, want := range map[string]float64{"gpu0_procs": 2, "gpu0_job_sm_util_pct": 40, "gpu0_job_mem_util_pct": 12} {
		if v, _ := r1.Get(name); v != want {
			t.Errorf("first tick %s = %v, want %v", name, v, want)
		}
	}
	if err := sm.Sample(t0.Add(100*time.Millisecond), &r2); err != nil {
		t.Fatal(err)
	}
	// The second read asks only for samples after ts 20 and there are none.
	if fmt.Sprint(since) != "[0 20]" {
		t.Errorf("asked for samples since %v, want [0 20]", since)
	}
	if v, ok := r2.Get("gpu0_job_sm_util_pct"); !ok || v != 0 {
		t.Errorf("second tick job util = %v, %v; want 0", v, ok)
	}
}

func TestLatestPerPID(t *testing.T) {
	in := []gonvml.ProcessUtilizationSample{
		{Pid: 7, TimeStamp: 5, SmUtil: 99}, // not after since=5: dropped
		{Pid: 7, TimeStamp: 9, SmUtil: 50},
		{Pid: 8, TimeStamp: 8, SmUtil: 10},
		{Pid: 7, TimeStamp: 6, SmUtil: 1}, // older than 9: ignored
	}
	got, last := latestPerPID(in, 5)
	if fmt.Sprint(got) != "[{7 50 0} {8 10 0}]" || last != 9 {
		t.Errorf("got %v last %d, want [{7 50 0} {8 10 0}] last 9", got, last)
	}
}

func TestClient_Close(t *testing.T) {
	s := newH100s(1)
	c, err := open(newDriver(s))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(s.ShutdownCalls()); n != 1 {
		t.Errorf("shutdown called %d times for two Close, want 1", n)
	}
	if _, err := c.Stats(nil); err == nil {
		t.Error("stats after close succeeded")
	}
	c2, _ := open(newDriver(newH100s(1)))
	defer c2.Close()
	if _, err := c2.Stats([]int{3}); err == nil || !strings.Contains(err.Error(), "gpu 3") {
		t.Errorf("stats of a missing gpu: err = %v", err)
	}
}

// TestSampler_InLoop runs the NVML sampler in the sampling loop beside a
// failing one, as the profiler does.
func TestSampler_InLoop(t *testing.T) {
	c, err := open(newDriver(newH100s(2)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	agg := sample.NewAggregator()
	l, err := sample.NewLoop(0, agg, NewSampler(c, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		l.Tick(t0.Add(time.Duration(i) * sample.DefaultInterval))
	}
	if s, ok := agg.Summary("gpu1_power_w"); !ok || s.Count != 3 || s.Mean != 101 {
		t.Errorf("gpu1_power_w summary = %+v, want 3 samples of 101 W", s)
	}
	if h := l.Health()[0]; h.Name != "nvml" || h.Samples != 3 || h.Failures != 0 {
		t.Errorf("health = %+v", h)
	}
}
