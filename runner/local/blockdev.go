package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// diskFor returns the whole block device that holds path, for a read
// throttle: the st_dev of path, mapped from a partition to its disk through
// sysRoot (normally /sys), since blk-throttle accepts only whole disks.
func diskFor(path, sysRoot string) (devNum, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return devNum{}, fmt.Errorf("find the disk holding %s: %w", path, err)
	}
	d := devNum{Major: int64(unix.Major(st.Dev)), Minor: int64(unix.Minor(st.Dev))}
	disk, err := wholeDisk(d, sysRoot)
	if err != nil {
		return devNum{}, fmt.Errorf("find the disk holding %s: %w", path, err)
	}
	return disk, nil
}

// wholeDisk maps a block device number to its disk using
// <sysRoot>/dev/block/MAJ:MIN: a partition's sysfs directory holds a
// "partition" file and sits inside its disk's directory, whose "dev" file
// names the disk.
func wholeDisk(d devNum, sysRoot string) (devNum, error) {
	link := filepath.Join(sysRoot, "dev", "block", d.String())
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return devNum{}, fmt.Errorf("device %s is not a block device (no %s: overlay, tmpfs or another virtual file system?): %w", d, link, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err != nil {
		return d, nil
	}
	parent := filepath.Join(filepath.Dir(dir), "dev")
	b, err := os.ReadFile(parent)
	if err != nil {
		return devNum{}, fmt.Errorf("device %s is a partition but its disk is unknown: %w", d, err)
	}
	disk, err := parseDevNum(string(b))
	if err != nil {
		return devNum{}, fmt.Errorf("device %s is a partition; read its disk from %s: %w", d, parent, err)
	}
	return disk, nil
}

// parseDevNum parses "MAJ:MIN".
func parseDevNum(s string) (devNum, error) {
	s = strings.TrimSpace(s)
	a, b, ok := strings.Cut(s, ":")
	maj, err1 := strconv.ParseInt(a, 10, 64)
	mnr, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || maj < 0 || mnr < 0 {
		return devNum{}, fmt.Errorf("%q is not a device number (want MAJ:MIN)", s)
	}
	return devNum{Major: maj, Minor: mnr}, nil
}
