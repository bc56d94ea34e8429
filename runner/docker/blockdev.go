package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// blockDeviceFor returns the whole-disk device node (e.g. "/dev/vda") that
// holds path, for Docker's BlkioDeviceReadBps: the file's st_dev names a
// MAJ:MIN, sysfs (sysRoot/dev/block/MAJ:MIN) tells whether it is a partition
// — throttling applies to whole disks, so a partition is replaced by its
// parent — and the device's uevent gives its name under /dev.
func blockDeviceFor(path, sysRoot string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", fmt.Errorf("find the block device of %q: %w", path, err)
	}
	maj, min := unix.Major(st.Dev), unix.Minor(st.Dev)
	dir := filepath.Join(sysRoot, "dev", "block", fmt.Sprintf("%d:%d", maj, min))
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("find the block device of %q: device %d:%d is not a block device (tmpfs, overlay or a network filesystem?): read throttling needs a disk", path, maj, min)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return "", fmt.Errorf("find the disk holding partition %d:%d: %w", maj, min, err)
		}
		dir = filepath.Dir(real)
	}
	b, err := os.ReadFile(filepath.Join(dir, "uevent"))
	if err != nil {
		return "", fmt.Errorf("find the block device of %q: %w", path, err)
	}
	name, err := ueventDevName(string(b))
	if err != nil {
		return "", fmt.Errorf("find the block device of %q: %s/uevent: %w", path, dir, err)
	}
	return "/dev/" + name, nil
}

// ueventDevName extracts DEVNAME from a sysfs uevent file.
func ueventDevName(uevent string) (string, error) {
	for _, line := range strings.Split(uevent, "\n") {
		if v, ok := strings.CutPrefix(line, "DEVNAME="); ok && v != "" {
			return v, nil
		}
	}
	return "", errors.New("no DEVNAME")
}
