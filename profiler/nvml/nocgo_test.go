//go:build !cgo

package nvml

import "testing"

const cgoEnabled = false

// benchGPU: without cgo there is no NVML to sample.
func benchGPU(b testing.TB) *Client {
	b.Log("built without cgo: no NVML sampler")
	return nil
}
