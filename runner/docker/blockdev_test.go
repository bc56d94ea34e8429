package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/internal/testreq"
)

// fakeSys lays out sysfs's dev/block entry for the device holding file, as
// a partition (sda1 inside sda) or a whole disk.
func fakeSys(t *testing.T, file string, partition bool) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	sys := t.TempDir()
	majmin := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	disk := filepath.Join(sys, "devices", "virtual", "block", "sdz")
	target := disk
	writeFiles(t, disk, map[string]string{"uevent": "MAJOR=8\nMINOR=0\nDEVNAME=sdz\nDEVTYPE=disk\n"})
	if partition {
		target = filepath.Join(disk, "sdz1")
		writeFiles(t, target, map[string]string{"uevent": "DEVNAME=sdz1\nDEVTYPE=partition\n", "partition": "1\n"})
	}
	if err := os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(sys, "dev", "block", majmin)); err != nil {
		t.Fatal(err)
	}
	return sys
}

func TestBlockDeviceFor_FakeSysfs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	writeFiles(t, filepath.Dir(file), map[string]string{"f": "x"})
	for _, tt := range []struct {
		name      string
		partition bool
	}{{"whole disk", false}, {"partition: throttle its disk", true}} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := blockDeviceFor(file, fakeSys(t, file, tt.partition))
			if err != nil || got != "/dev/sdz" {
				t.Errorf("blockDeviceFor = %q, %v; want /dev/sdz", got, err)
			}
		})
	}
	if _, err := blockDeviceFor(file, t.TempDir()); err == nil || !strings.Contains(err.Error(), "is not a block device") {
		t.Errorf("no sysfs entry: err = %v", err)
	}
	if _, err := blockDeviceFor("/no/such/file", "/sys"); err == nil || !strings.Contains(err.Error(), `"/no/such/file"`) {
		t.Errorf("missing path: err = %v", err)
	}
}

// On this host, a temp dir's device node exists and is a block device.
func TestBlockDeviceFor_RealHost(t *testing.T) {
	dev, err := blockDeviceFor(t.TempDir(), "/sys")
	if err != nil {
		testreq.Skip(t, "blkio", err.Error())
	}
	fi, err := os.Stat(dev)
	if err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		t.Errorf("%s: %v, mode %v; want a block device node", dev, err, fi.Mode())
	}
}

func TestUeventDevName(t *testing.T) {
	if n, err := ueventDevName("MAJOR=254\nMINOR=0\nDEVNAME=vda\n"); err != nil || n != "vda" {
		t.Errorf("got %q, %v", n, err)
	}
	if _, err := ueventDevName("MAJOR=1\n"); err == nil {
		t.Error("no error without DEVNAME")
	}
}
