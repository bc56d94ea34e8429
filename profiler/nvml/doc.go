// Package nvml owns everything synergy asks of NVIDIA's management library
// and is the only package that imports github.com/NVIDIA/go-nvml. It wraps
// NVML twice, as nomad-device-nvidia does: a raw driver (the handful of NVML
// calls used, in driver_cgo.go) and a small domain Client (Open, Devices,
// Stats, Close). NVML needs cgo: a build without cgo gets a stub driver whose
// Init fails with ErrUnavailableLib.
//
// "No GPU" is a normal state. Detect opens NVML and returns a Detection with
// Mode "nvml" (device names, an open Client) or Mode "none" and the Reason:
// no library (ErrUnavailableLib), a driver that will not initialise, or no
// device. The profiler turns it into the profile's gpu block with GPUInfo
// (it sets "emulated" itself for synthtrain), warns, and calls RequireGPU
// where a GPU is required. Nothing is called after a failed Init: with the real
// library a device call then dies in the dynamic linker, beyond recover.
//
// Stats reads, per device: GPU and memory utilisation, memory used, SM
// clock, power, and per-process SM/memory utilisation since the previous
// read. A field the device does not support (NVML_ERROR_NOT_SUPPORTED) is
// absent (a nil pointer), not an error. Sampler adapts a Client to
// profiler/sample under the name "nvml", writing gpuN_util_pct,
// gpuN_mem_util_pct, gpuN_mem_used_bytes, gpuN_sm_clock_mhz, gpuN_power_w,
// gpuN_procs and, for the job's processes, gpuN_job_sm_util_pct and
// gpuN_job_mem_util_pct. MIG instances are not enumerated.
package nvml
