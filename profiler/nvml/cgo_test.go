//go:build cgo

package nvml

import "testing"

const cgoEnabled = true

// benchGPU opens the system NVML when it finds a GPU, else go-nvml's DGX
// H100 mock with one GPU (which measures our side of the calls, not the
// driver's).
func benchGPU(b testing.TB) *Client {
	if det, c := Detect(); c != nil {
		b.Logf("sampling %d real GPUs (driver %s)", len(det.Devices), det.DriverVersion)
		return c
	}
	c, err := open(newDriver(newH100s(1)))
	if err != nil {
		b.Fatal(err)
	}
	return c
}
