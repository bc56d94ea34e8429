package cgroupfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/internal/testreq"
)

// sysDevice lays out one block device in a fake sysfs tree sys: its
// directory dir (relative to sys) with "dev", "uevent" (DEVNAME=name) and,
// for a partition, "partition"; and the sys/dev/block/MAJ:MIN link to it.
// A partition's dir sits inside its disk's, as in the kernel's tree.
func sysDevice(t *testing.T, sys, dir string, d Dev, name string, partition bool) {
	t.Helper()
	full := filepath.Join(sys, dir)
	files := map[string]string{"dev": d.String() + "\n", "uevent": "MAJOR=x\nMINOR=y\nDEVNAME=" + name + "\n"}
	if partition {
		files["partition"] = "1\n"
	}
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(full, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(full, filepath.Join(sys, "dev", "block", d.String())); err != nil {
		t.Fatal(err)
	}
}

func TestWholeDisk_FakeSysfs(t *testing.T) {
	sys := t.TempDir()
	sysDevice(t, sys, "devices/pci/virtio1/block/vda", Dev{254, 0}, "vda", false)
	sysDevice(t, sys, "devices/pci/nvme/block/nvme0n1", Dev{259, 0}, "nvme0n1", false)
	sysDevice(t, sys, "devices/pci/nvme/block/nvme0n1/nvme0n1p2", Dev{259, 2}, "nvme0n1p2", true)
	tests := []struct {
		in      Dev
		want    Dev
		wantErr string
	}{
		{Dev{254, 0}, Dev{254, 0}, ""},     // whole disk stays
		{Dev{259, 2}, Dev{259, 0}, ""},     // partition -> its disk
		{Dev{0, 45}, Dev{}, "not a block"}, // overlay, tmpfs
	}
	for _, tt := range tests {
		got, err := WholeDisk(tt.in, sys)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%v: got %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	// DevName names the device itself, a partition included.
	if n, err := DevName(Dev{259, 2}, sys); err != nil || n != "nvme0n1p2" {
		t.Errorf("DevName(259:2) = %q, %v; want nvme0n1p2", n, err)
	}
}

func TestDiskNameOf_FakeSysfs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := DeviceOf(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		partition bool
	}{{"whole disk", false}, {"partition: throttle its disk", true}} {
		t.Run(tt.name, func(t *testing.T) {
			// The file's device is the disk sdz, or its partition sdz1
			// (the disk then known only as the partition's parent).
			sys := t.TempDir()
			if tt.partition {
				sysDevice(t, sys, "devices/virtual/block/sdz/sdz1", d, "sdz1", true)
				if err := os.WriteFile(filepath.Join(sys, "devices/virtual/block/sdz/uevent"), []byte("DEVNAME=sdz\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				sysDevice(t, sys, "devices/virtual/block/sdz", d, "sdz", false)
			}
			got, err := DiskNameOf(file, sys)
			if err != nil || got != "sdz" {
				t.Errorf("DiskNameOf = %q, %v; want sdz", got, err)
			}
		})
	}
	if _, err := DiskNameOf(file, t.TempDir()); err == nil || !strings.Contains(err.Error(), "is not a block device") {
		t.Errorf("no sysfs entry: err = %v", err)
	}
	if _, err := DiskNameOf("/no/such/file", "/sys"); err == nil || !strings.Contains(err.Error(), `"/no/such/file"`) {
		t.Errorf("missing path: err = %v", err)
	}
}

// On this host, a temp dir's device node exists and is a block device.
func TestDiskNameOf_RealHost(t *testing.T) {
	name, err := DiskNameOf(t.TempDir(), "/sys")
	if err != nil {
		testreq.Skip(t, "blkio", err.Error())
	}
	dev := "/dev/" + name
	fi, err := os.Stat(dev)
	if err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		t.Errorf("%s: %v, mode %v; want a block device node", dev, err, fi.Mode())
	}
}

func TestUeventName(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{"MAJOR=254\nMINOR=0\nDEVNAME=vda\n": "vda", "MAJOR=1\n": ""} {
		if err := os.WriteFile(filepath.Join(dir, "uevent"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := ueventName(dir)
		if n != want || (err != nil) != (want == "") {
			t.Errorf("uevent %q: got %q, %v; want %q (an error without DEVNAME)", body, n, err, want)
		}
	}
}

func TestParseDev(t *testing.T) {
	if d, err := ParseDev("259:2\n"); err != nil || d != (Dev{259, 2}) {
		t.Errorf("ParseDev = %v, %v", d, err)
	}
	for _, bad := range []string{"259", "a:b", "-1:0", ""} {
		if _, err := ParseDev(bad); err == nil {
			t.Errorf("ParseDev(%q) passed", bad)
		}
	}
}
