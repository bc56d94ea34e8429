package cgroupfs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Cgroup modes reported by DetectMode.
const (
	ModeV1     = "v1"     // only cgroup v1 hierarchies under the root
	ModeHybrid = "hybrid" // v1 controllers plus a cgroup2 mount at <root>/unified
	ModeV2     = "v2"     // the root itself is a cgroup2 (unified) mount
	ModeNone   = "none"   // no cgroup file system under the root
)

// DetectMode reports how cgroups are mounted under cgroupRoot (normally
// /sys/fs/cgroup) according to procRoot/self/mounts (procRoot normally
// /proc): "v1", "hybrid", "v2" or "none". An unreadable mount table reads as
// "none".
func DetectMode(procRoot, cgroupRoot string) string {
	f, err := os.Open(filepath.Join(procRoot, "self", "mounts"))
	if err != nil {
		return ModeNone
	}
	defer f.Close()
	mode, err := modeFromMounts(f, cgroupRoot)
	if err != nil {
		return ModeNone
	}
	return mode
}

// mount is one line of /proc/self/mounts.
type mount struct {
	Point   string
	FSType  string
	Options []string
}

// parseMounts reads a /proc/self/mounts table ("dev point fstype opts 0 0").
func parseMounts(r io.Reader) ([]mount, error) {
	var out []mount
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			return nil, fmt.Errorf("mount table line %d: want at least 4 fields, got %d: %q", n, len(f), line)
		}
		out = append(out, mount{Point: Unescape(f[1]), FSType: f[2], Options: strings.Split(f[3], ",")})
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	return out, nil
}

// modeFromMounts classifies the cgroup mounts under root.
func modeFromMounts(r io.Reader, root string) (string, error) {
	mounts, err := parseMounts(r)
	if err != nil {
		return ModeNone, err
	}
	root = filepath.Clean(root)
	v1, unified := false, false
	for _, m := range mounts {
		p := filepath.Clean(m.Point)
		switch m.FSType {
		case "cgroup2":
			if p == root {
				return ModeV2, nil
			}
			if p == filepath.Join(root, "unified") {
				unified = true
			}
		case "cgroup":
			if strings.HasPrefix(p, root+"/") {
				v1 = true
			}
		}
	}
	switch {
	case v1 && unified:
		return ModeHybrid, nil
	case v1:
		return ModeV1, nil
	}
	return ModeNone, nil
}
