//go:build cgo

package nvml

import (
	"errors"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlDriver is the raw layer over go-nvml's Interface: the system library
// (gonvml.New) in production, a go-nvml mock server in tests.
type nvmlDriver struct {
	lib     gonvml.Interface
	handles map[int]gonvml.Device
}

func newSystemDriver() driver { return newDriver(gonvml.New()) }

func newDriver(lib gonvml.Interface) *nvmlDriver {
	return &nvmlDriver{lib: lib, handles: map[int]gonvml.Device{}}
}

// nvmlErr turns a non-success return into an error saying what was asked.
func nvmlErr(op string, ret gonvml.Return) error {
	return fmt.Errorf("%s: %s", op, ret.Error())
}

func (d *nvmlDriver) Init() error {
	switch ret := d.lib.Init(); ret {
	case gonvml.SUCCESS:
		return nil
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Errorf("%w: libnvidia-ml.so.1 could not be loaded", ErrUnavailableLib)
	default:
		return nvmlErr("nvmlInit", ret)
	}
}

func (d *nvmlDriver) Shutdown() error {
	if ret := d.lib.Shutdown(); ret != gonvml.SUCCESS {
		return nvmlErr("nvmlShutdown", ret)
	}
	return nil
}

func (d *nvmlDriver) DriverVersion() (string, error) {
	v, ret := d.lib.SystemGetDriverVersion()
	if ret != gonvml.SUCCESS {
		return "", nvmlErr("nvmlSystemGetDriverVersion", ret)
	}
	return v, nil
}

func (d *nvmlDriver) DeviceCount() (int, error) {
	n, ret := d.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return 0, nvmlErr("nvmlDeviceGetCount", ret)
	}
	return n, nil
}

func (d *nvmlDriver) handle(i int) (gonvml.Device, error) {
	if h, ok := d.handles[i]; ok {
		return h, nil
	}
	h, ret := d.lib.DeviceGetHandleByIndex(i)
	if ret != gonvml.SUCCESS {
		return nil, nvmlErr("nvmlDeviceGetHandleByIndex", ret)
	}
	d.handles[i] = h
	return h, nil
}

func (d *nvmlDriver) Device(i int) (DeviceInfo, error) {
	info := DeviceInfo{Index: i}
	h, err := d.handle(i)
	if err != nil {
		return info, err
	}
	var errs []error
	// Identity fields: NOT_SUPPORTED leaves them empty.
	if v, ret := h.GetName(); ret == gonvml.SUCCESS {
		info.Name = v
	} else if ret != gonvml.ERROR_NOT_SUPPORTED {
		errs = append(errs, nvmlErr("nvmlDeviceGetName", ret))
	}
	if v, ret := h.GetUUID(); ret == gonvml.SUCCESS {
		info.UUID = v
	} else if ret != gonvml.ERROR_NOT_SUPPORTED {
		errs = append(errs, nvmlErr("nvmlDeviceGetUUID", ret))
	}
	if m, ret := h.GetMemoryInfo(); ret == gonvml.SUCCESS {
		info.MemTotalBytes = m.Total
	} else if ret != gonvml.ERROR_NOT_SUPPORTED {
		errs = append(errs, nvmlErr("nvmlDeviceGetMemoryInfo", ret))
	}
	return info, errors.Join(errs...)
}

// field records one call's outcome: success stores, NOT_SUPPORTED leaves the
// field absent, anything else is an error.
func field(errs *[]error, op string, ret gonvml.Return, store func()) {
	switch ret {
	case gonvml.SUCCESS:
		store()
	case gonvml.ERROR_NOT_SUPPORTED:
	default:
		*errs = append(*errs, nvmlErr(op, ret))
	}
}

func (d *nvmlDriver) Stats(i int, sinceUS uint64) (Stats, uint64, error) {
	s := Stats{Index: i}
	h, err := d.handle(i)
	if err != nil {
		return s, sinceUS, err
	}
	var errs []error
	u, ret := h.GetUtilizationRates()
	field(&errs, "nvmlDeviceGetUtilizationRates", ret, func() {
		g, m := float64(u.Gpu), float64(u.Memory)
		s.GPUUtilPct, s.MemUtilPct = &g, &m
	})
	mem, ret := h.GetMemoryInfo()
	field(&errs, "nvmlDeviceGetMemoryInfo", ret, func() { s.MemUsedBytes = &mem.Used })
	clk, ret := h.GetClockInfo(gonvml.CLOCK_SM)
	field(&errs, "nvmlDeviceGetClockInfo(SM)", ret, func() { s.SMClockMHz = &clk })
	mw, ret := h.GetPowerUsage()
	field(&errs, "nvmlDeviceGetPowerUsage", ret, func() {
		w := float64(mw) / 1000
		s.PowerW = &w
	})

	lastUS := sinceUS
	samples, ret := h.GetProcessUtilization(sinceUS)
	switch ret {
	case gonvml.SUCCESS:
		s.ProcessesSupported = true
		s.Processes, lastUS = latestPerPID(samples, sinceUS)
	case gonvml.ERROR_NOT_FOUND: // no process sampled since sinceUS
		s.ProcessesSupported = true
	case gonvml.ERROR_NOT_SUPPORTED:
	default:
		errs = append(errs, nvmlErr("nvmlDeviceGetProcessUtilization", ret))
	}
	return s, lastUS, errors.Join(errs...)
}

// latestPerPID keeps each PID's newest sample after sinceUS, in the order
// PIDs first appear, and returns the newest timestamp seen.
func latestPerPID(samples []gonvml.ProcessUtilizationSample, sinceUS uint64) ([]ProcessUtil, uint64) {
	last := sinceUS
	var out []ProcessUtil
	at := map[uint32]int{}
	ts := map[uint32]uint64{}
	for _, p := range samples {
		if p.TimeStamp <= sinceUS {
			continue
		}
		last = max(last, p.TimeStamp)
		pu := ProcessUtil{PID: int(p.Pid), SMUtilPct: float64(p.SmUtil), MemUtilPct: float64(p.MemUtil)}
		if j, ok := at[p.Pid]; ok {
			if p.TimeStamp > ts[p.Pid] {
				out[j], ts[p.Pid] = pu, p.TimeStamp
			}
			continue
		}
		at[p.Pid], ts[p.Pid] = len(out), p.TimeStamp
		out = append(out, pu)
	}
	return out, last
}
