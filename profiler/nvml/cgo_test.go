//go:build cgo

package nvml

const cgoEnabled = true
