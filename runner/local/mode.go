package local

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
		out = append(out, mount{Point: unescapeMount(f[1]), FSType: f[2], Options: strings.Split(f[3], ",")})
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	return out, nil
}

// unescapeMount undoes the kernel's octal escapes ("\040" for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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

// procCgroups is the content of /proc/<pid>/cgroup: the path of the process
// in each v1 controller's hierarchy and in the unified one.
type procCgroups struct {
	V1      map[string]string // controller ("memory", "name=systemd") -> path
	Unified string            // path on the "0::" line; "" if none
}

// parseProcCgroup reads /proc/<pid>/cgroup ("id:controllers:path" lines).
func parseProcCgroup(r io.Reader) (procCgroups, error) {
	out := procCgroups{V1: map[string]string{}}
	s := bufio.NewScanner(r)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return procCgroups{}, fmt.Errorf("cgroup membership line %d: want id:controllers:path, got %q", n, line)
		}
		if parts[2] == "" || parts[2][0] != '/' {
			return procCgroups{}, fmt.Errorf("cgroup membership line %d: path %q is not absolute", n, parts[2])
		}
		if parts[0] == "0" && parts[1] == "" {
			out.Unified = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				out.V1[c] = parts[2]
			}
		}
	}
	if err := s.Err(); err != nil {
		return procCgroups{}, fmt.Errorf("read cgroup membership: %w", err)
	}
	return out, nil
}
