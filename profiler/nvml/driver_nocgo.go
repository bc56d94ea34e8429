//go:build !cgo

package nvml

import "fmt"

// noLib is the driver of a build without cgo: NVML cannot be loaded.
type noLib struct{}

func newSystemDriver() driver { return noLib{} }

func (noLib) Init() error {
	return fmt.Errorf("%w: built without cgo", ErrUnavailableLib)
}

// The methods below are never reached: Client calls nothing after a failed
// Init. They fail rather than panic all the same.
func (noLib) Shutdown() error                          { return ErrUnavailableLib }
func (noLib) DriverVersion() (string, error)           { return "", ErrUnavailableLib }
func (noLib) DeviceCount() (int, error)                { return 0, ErrUnavailableLib }
func (noLib) Device(int) (DeviceInfo, error)           { return DeviceInfo{}, ErrUnavailableLib }
func (noLib) Stats(int, uint64) (Stats, uint64, error) { return Stats{}, 0, ErrUnavailableLib }
