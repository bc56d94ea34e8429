package nvml

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/sensitivity"
)

// ErrUnavailableLib means NVML cannot be used at all here: the library is
// not installed, or the binary was built without cgo. Callers treat it as
// "no GPU", not as a failure.
var ErrUnavailableLib = errors.New("nvml library unavailable")

// DeviceInfo describes one GPU.
type DeviceInfo struct {
	Index         int
	UUID          string
	Name          string
	MemTotalBytes uint64
}

// ProcessUtil is one process's share of a GPU over the last sampling window.
type ProcessUtil struct {
	PID        int
	SMUtilPct  float64
	MemUtilPct float64
}

// Stats is one read of one GPU. A nil field is one the device does not
// support.
type Stats struct {
	Index        int
	GPUUtilPct   *float64
	MemUtilPct   *float64
	MemUsedBytes *uint64
	SMClockMHz   *uint32
	PowerW       *float64
	// Processes are the processes NVML sampled since the previous read (the
	// latest sample per PID); ProcessesSupported is false where the driver
	// does not offer per-process utilisation.
	Processes          []ProcessUtil
	ProcessesSupported bool
}

// driver is the raw NVML layer: the few calls the Client makes. After Init
// fails, no method may be called.
type driver interface {
	Init() error
	Shutdown() error
	DriverVersion() (string, error)
	DeviceCount() (int, error)
	Device(i int) (DeviceInfo, error)
	// Stats reads device i; processes are those sampled after sinceUS (a
	// CPU timestamp in µs) and lastUS is the newest timestamp seen.
	Stats(i int, sinceUS uint64) (s Stats, lastUS uint64, err error)
}

// Client is an initialised NVML with its devices enumerated. It is not safe
// for concurrent use.
type Client struct {
	d             driver
	driverVersion string
	devices       []DeviceInfo
	lastUS        []uint64
	closed        bool
}

func open(d driver) (*Client, error) {
	if err := d.Init(); err != nil {
		return nil, fmt.Errorf("initialise nvml: %w", err)
	}
	c := &Client{d: d}
	fail := func(err error) (*Client, error) {
		d.Shutdown()
		return nil, err
	}
	v, err := d.DriverVersion()
	if err != nil {
		return fail(fmt.Errorf("read nvidia driver version: %w", err))
	}
	c.driverVersion = v
	n, err := d.DeviceCount()
	if err != nil {
		return fail(fmt.Errorf("count gpus: %w", err))
	}
	for i := 0; i < n; i++ {
		info, err := d.Device(i)
		if err != nil {
			return fail(fmt.Errorf("describe gpu %d: %w", i, err))
		}
		c.devices = append(c.devices, info)
	}
	c.lastUS = make([]uint64, n)
	return c, nil
}

// DriverVersion is the NVIDIA driver's version string.
func (c *Client) DriverVersion() string { return c.driverVersion }

// Devices lists the GPUs found at Open.
func (c *Client) Devices() []DeviceInfo { return append([]DeviceInfo(nil), c.devices...) }

// Stats reads the given devices (all when indices is nil). A device that
// fails does not hide the others: what was read is returned with the errors
// joined.
func (c *Client) Stats(indices []int) ([]Stats, error) {
	if c.closed {
		return nil, errors.New("read gpu stats: nvml client is closed")
	}
	if indices == nil {
		indices = make([]int, len(c.devices))
		for i := range indices {
			indices[i] = i
		}
	}
	out := make([]Stats, 0, len(indices))
	var errs []error
	for _, i := range indices {
		if i < 0 || i >= len(c.devices) {
			errs = append(errs, fmt.Errorf("read gpu %d stats: no such gpu (%d found)", i, len(c.devices)))
			continue
		}
		s, last, err := c.d.Stats(i, c.lastUS[i])
		s.Index = i
		if last > c.lastUS[i] {
			c.lastUS[i] = last
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read gpu %d stats: %w", i, err))
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// Close shuts NVML down; further calls are errors. Closing twice is a no-op.
func (c *Client) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if err := c.d.Shutdown(); err != nil {
		return fmt.Errorf("shut nvml down: %w", err)
	}
	return nil
}

// Detection is what Detect found.
type Detection struct {
	// Mode is sensitivity.GPUModeNVML or sensitivity.GPUModeNone.
	Mode          string
	Devices       []DeviceInfo
	DriverVersion string
	// Reason says why Mode is "none".
	Reason string
	// Err is the error behind Reason (nil for "no device"); errors.Is(Err,
	// ErrUnavailableLib) tells "no library" from a broken driver.
	Err error
}

// Detect opens NVML and reports the GPU mode. With Mode "nvml" the Client
// is open and the caller must Close it; with Mode "none" it is nil.
func Detect() (Detection, *Client) { return detect(newSystemDriver()) }

func detect(d driver) (Detection, *Client) {
	c, err := open(d)
	if err != nil {
		return Detection{Mode: sensitivity.GPUModeNone, Reason: err.Error(), Err: err}, nil
	}
	if len(c.devices) == 0 {
		c.Close()
		return Detection{Mode: sensitivity.GPUModeNone, DriverVersion: c.driverVersion,
			Reason: "NVML initialised (driver " + c.driverVersion + ") but found no GPU"}, nil
	}
	return Detection{Mode: sensitivity.GPUModeNVML, Devices: c.Devices(), DriverVersion: c.driverVersion}, c
}

// GPUInfo is the profile's gpu block for this detection.
func (d Detection) GPUInfo() sensitivity.GPUInfo {
	g := sensitivity.GPUInfo{Mode: d.Mode, Count: len(d.Devices), Note: d.Reason}
	for _, dev := range d.Devices {
		g.Devices = append(g.Devices, dev.Name)
	}
	if len(g.Devices) > 0 {
		g.Type = sensitivity.GPUTypeFromDevice(g.Devices[0])
	}
	return g
}

// RequireGPU is the error for a caller that needs a GPU: nil in mode
// "nvml", else an error that says why there is none.
func (d Detection) RequireGPU() error {
	if d.Mode == sensitivity.GPUModeNVML {
		return nil
	}
	return fmt.Errorf("no usable GPU (%s)", d.Reason)
}

// Sampler adapts a Client to profiler/sample under the name "nvml".
type Sampler struct {
	c       *Client
	indices []int
	jobPIDs func() []int
	names   map[int]seriesNames
	pids    map[int]bool
}

type seriesNames struct {
	util, memUtil, memUsed, smClock, power, procs, jobSM, jobMem string
}

var _ sample.Sampler = (*Sampler)(nil)

// NewSampler samples the GPUs at indices (all when nil) through c. jobPIDs,
// when not nil, returns the PIDs of the job's processes each tick, and the
// sampler writes their summed utilisation; without it the sum covers every
// process on the GPU.
func NewSampler(c *Client, indices []int, jobPIDs func() []int) *Sampler {
	s := &Sampler{c: c, indices: indices, jobPIDs: jobPIDs, names: map[int]seriesNames{}, pids: map[int]bool{}}
	for i := range c.devices {
		p := "gpu" + strconv.Itoa(i) + "_"
		s.names[i] = seriesNames{p + "util_pct", p + "mem_util_pct", p + "mem_used_bytes", p + "sm_clock_mhz",
			p + "power_w", p + "procs", p + "job_sm_util_pct", p + "job_mem_util_pct"}
	}
	return s
}

// Name is "nvml".
func (s *Sampler) Name() string { return "nvml" }

// Sample writes each device's values; unsupported ones are left out.
func (s *Sampler) Sample(now time.Time, out *sample.Record) error {
	stats, err := s.c.Stats(s.indices)
	var filter map[int]bool
	if s.jobPIDs != nil {
		clear(s.pids)
		for _, p := range s.jobPIDs() {
			s.pids[p] = true
		}
		filter = s.pids
	}
	for _, st := range stats {
		n := s.names[st.Index]
		setF := func(name string, v *float64) {
			if v != nil {
				out.Set(name, *v)
			}
		}
		setF(n.util, st.GPUUtilPct)
		setF(n.memUtil, st.MemUtilPct)
		setF(n.power, st.PowerW)
		if st.MemUsedBytes != nil {
			out.Set(n.memUsed, float64(*st.MemUsedBytes))
		}
		if st.SMClockMHz != nil {
			out.Set(n.smClock, float64(*st.SMClockMHz))
		}
		if st.ProcessesSupported {
			sm, mem := JobUtil(st.Processes, filter)
			out.Set(n.procs, float64(len(st.Processes)))
			out.Set(n.jobSM, sm)
			out.Set(n.jobMem, mem)
		}
	}
	return err
}

// JobUtil sums the SM and memory utilisation (percent of the GPU) of the
// processes whose PID is in pids, or of all of them when pids is nil.
func JobUtil(procs []ProcessUtil, pids map[int]bool) (smPct, memPct float64) {
	for _, p := range procs {
		if pids == nil || pids[p.PID] {
			smPct += p.SMUtilPct
			memPct += p.MemUtilPct
		}
	}
	return smPct, memPct
}
