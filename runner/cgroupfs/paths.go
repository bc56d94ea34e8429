package cgroupfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Membership is a process's place in the cgroup hierarchies, as
// /proc/<pid>/cgroup says: a path per v1 controller and the path in the
// unified hierarchy. Paths are relative to each hierarchy's root as seen
// from the reader's cgroup namespace.
type Membership struct {
	V1      map[string]string // controller ("memory", "name=systemd") -> path
	Unified string            // path on the "0::" line; "" if none
}

// ParseProcCgroup parses the content of /proc/<pid>/cgroup
// ("ID:CONTROLLERS:PATH" lines; an empty CONTROLLERS field is the unified
// hierarchy). Errors name the line.
func ParseProcCgroup(b []byte) (Membership, error) {
	out := Membership{V1: map[string]string{}}
	for n, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return Membership{}, fmt.Errorf("cgroup membership line %d: want ID:CONTROLLERS:PATH, got %q", n+1, line)
		}
		if parts[2] == "" || parts[2][0] != '/' {
			return Membership{}, fmt.Errorf("cgroup membership line %d: path %q is not absolute", n+1, parts[2])
		}
		if parts[1] == "" {
			out.Unified = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				out.V1[c] = parts[2]
			}
		}
	}
	return out, nil
}

// PathsOf returns the cgroup directories of process pid as a paths map
// (controller -> directory on v1, KeyUnified -> directory on v2), read from
// procRoot/<pid>/cgroup and this process's mount table
// procRoot/self/mountinfo, so the directories are as seen from here (a
// hierarchy mounted elsewhere, or a container's view of it, included).
func PathsOf(procRoot string, pid int) (map[string]string, error) {
	cg, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return nil, fmt.Errorf("find cgroups of pid %d: %w", pid, err)
	}
	mi, err := os.ReadFile(filepath.Join(procRoot, "self", "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("find cgroup mounts: %w", err)
	}
	paths, err := resolvePaths(cg, mi)
	if err != nil {
		return nil, fmt.Errorf("find cgroups of pid %d: %w", pid, err)
	}
	return paths, nil
}

// cgMount is one cgroup filesystem mount: its hierarchy root and where it is
// mounted.
type cgMount struct {
	root, point string
}

// resolvePaths joins a /proc/<pid>/cgroup file with a mountinfo table. A v1
// line ("3:cpu,cpuacct:/a/b") gives each controller of the hierarchy the
// same directory; the v2 line ("0::/a/b") gives KeyUnified when a cgroup2
// filesystem is mounted. Hierarchies that are not mounted are skipped.
func resolvePaths(cgroupFile, mountinfo []byte) (map[string]string, error) {
	m, err := ParseProcCgroup(cgroupFile)
	if err != nil {
		return nil, err
	}
	v1, v2, err := cgroupMounts(mountinfo)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if v2 != nil && m.Unified != "" {
		out[KeyUnified] = join(*v2, m.Unified)
	}
	for c, p := range m.V1 {
		if mnt, ok := v1[c]; ok {
			out[c] = join(mnt, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no mounted cgroup hierarchy holds it")
	}
	return out, nil
}

// cgroupMounts reads the cgroup mounts of a mountinfo table: the first
// mount of each v1 controller, and of the unified hierarchy.
func cgroupMounts(mountinfo []byte) (v1 map[string]cgMount, v2 *cgMount, err error) {
	v1 = map[string]cgMount{}
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		// id parent maj:min root point opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			return nil, nil, fmt.Errorf("mountinfo line %d: %q has too few fields", n, sc.Text())
		}
		m := cgMount{root: Unescape(f[3]), point: Unescape(f[4])}
		switch g[0] {
		case "cgroup2":
			if v2 == nil {
				v2 = &m
			}
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				if _, seen := v1[opt]; !seen {
					v1[opt] = m
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return v1, v2, nil
}

// join places a cgroup path under a mount whose root may itself be a
// subdirectory of the hierarchy (a container's view).
func join(m cgMount, p string) string {
	if m.root != "/" {
		if rel, ok := strings.CutPrefix(p, m.root); ok {
			p = rel
		}
	}
	return filepath.Join(m.point, p)
}

// Unescape undoes the kernel's octal escapes in mount tables ("\040" for a
// space).
func Unescape(s string) string {
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
