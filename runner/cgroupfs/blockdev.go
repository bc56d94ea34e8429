package cgroupfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Dev is a device number.
type Dev struct{ Major, Minor int64 }

// String is "MAJ:MIN", as cgroup files and sysfs write it.
func (d Dev) String() string { return fmt.Sprintf("%d:%d", d.Major, d.Minor) }

// ParseDev parses "MAJ:MIN".
func ParseDev(s string) (Dev, error) {
	s = strings.TrimSpace(s)
	a, b, ok := strings.Cut(s, ":")
	maj, err1 := strconv.ParseInt(a, 10, 64)
	mnr, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || maj < 0 || mnr < 0 {
		return Dev{}, fmt.Errorf("%q is not a device number (want MAJ:MIN)", s)
	}
	return Dev{Major: maj, Minor: mnr}, nil
}

// DeviceOf returns the device of the file system that holds path (its
// st_dev): a partition or a whole disk, or a virtual device (tmpfs,
// overlay) that sysfs does not list.
func DeviceOf(path string) (Dev, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Dev{}, fmt.Errorf("find the device of %q: %w", path, err)
	}
	return Dev{Major: int64(unix.Major(st.Dev)), Minor: int64(unix.Minor(st.Dev))}, nil
}

// DiskOf returns the whole disk that holds path, for a read throttle:
// blk-throttle (blkio.throttle.read_bps_device, io.max) accepts whole disks
// only, so a partition is mapped to its disk through sysRoot (normally
// /sys).
func DiskOf(path, sysRoot string) (Dev, error) {
	d, err := DeviceOf(path)
	if err != nil {
		return Dev{}, err
	}
	disk, err := WholeDisk(d, sysRoot)
	if err != nil {
		return Dev{}, fmt.Errorf("find the disk holding %q: %w", path, err)
	}
	return disk, nil
}

// DiskNameOf returns the kernel name ("vda", "nvme0n1") of the whole disk
// that holds path: its device node is /dev/<name>.
func DiskNameOf(path, sysRoot string) (string, error) {
	d, err := DeviceOf(path)
	if err != nil {
		return "", err
	}
	dir, _, err := diskDir(d, sysRoot)
	if err == nil {
		var name string
		if name, err = ueventName(dir); err == nil {
			return name, nil
		}
	}
	return "", fmt.Errorf("find the disk holding %q: %w", path, err)
}

// WholeDisk maps a block device to its disk using sysRoot/dev/block/MAJ:MIN:
// a partition's sysfs directory holds a "partition" file and sits inside
// its disk's directory, whose "dev" file gives the disk's number. A whole
// disk maps to itself.
func WholeDisk(d Dev, sysRoot string) (Dev, error) {
	dir, partition, err := diskDir(d, sysRoot)
	if err != nil || !partition {
		return d, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "dev"))
	if err != nil {
		return Dev{}, fmt.Errorf("device %s is a partition but its disk is unknown: %w", d, err)
	}
	disk, err := ParseDev(string(b))
	if err != nil {
		return Dev{}, fmt.Errorf("device %s is a partition; read its disk from %s: %w", d, filepath.Join(dir, "dev"), err)
	}
	return disk, nil
}

// DevName returns the kernel name of block device d itself ("sda1" for a
// partition), from the DEVNAME of its uevent under sysRoot.
func DevName(d Dev, sysRoot string) (string, error) {
	return ueventName(filepath.Join(sysRoot, "dev", "block", d.String()))
}

// diskDir returns the sysfs directory of the whole disk holding block
// device d, and whether d is a partition of it.
func diskDir(d Dev, sysRoot string) (dir string, partition bool, err error) {
	link := filepath.Join(sysRoot, "dev", "block", d.String())
	dir, err = filepath.EvalSymlinks(link)
	if err != nil {
		return "", false, fmt.Errorf("device %s is not a block device (no %s: tmpfs, overlay or a network file system?): %w", d, link, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err != nil {
		return dir, false, nil
	}
	return filepath.Dir(dir), true, nil
}

// ueventName reads DEVNAME from the uevent file of a sysfs device
// directory.
func ueventName(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "uevent"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "DEVNAME="); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("no DEVNAME in %s", filepath.Join(dir, "uevent"))
}
