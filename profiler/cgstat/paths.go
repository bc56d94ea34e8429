package cgstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PathsOf returns the cgroup directories of process pid in the form
// Handle.CgroupPaths uses (controller -> directory on v1, "unified" ->
// directory on v2), read from procRoot/<pid>/cgroup and the mount table
// procRoot/self/mountinfo. Paths are as seen from this process's cgroup
// namespace. It lets the profiler sample a process it did not place itself
// (a container's init process, or its own group in tests).
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

// resolvePaths joins a /proc/<pid>/cgroup file with a mountinfo table. v1
// lines ("3:cpu,cpuacct:/a/b") give each controller of the hierarchy the
// same directory; the v2 line ("0::/a/b") gives "unified" when a cgroup2
// filesystem is mounted. Hierarchies that are not mounted are skipped.
func resolvePaths(cgroupFile, mountinfo []byte) (map[string]string, error) {
	v1 := map[string]cgMount{} // controller -> mount
	var v2 *cgMount
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for n := 1; sc.Scan(); n++ {
		// id parent maj:min root point opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			return nil, fmt.Errorf("mountinfo line %d: %q has too few fields", n, sc.Text())
		}
		m := cgMount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
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
		return nil, err
	}
	out := map[string]string{}
	for n, line := range strings.Split(strings.TrimSpace(string(cgroupFile)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("cgroup line %d: %q is not ID:CONTROLLERS:PATH", n+1, line)
		}
		ctrls, p := parts[1], parts[2]
		if ctrls == "" {
			if v2 != nil {
				out[KeyUnified] = join(*v2, p)
			}
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			if m, ok := v1[c]; ok {
				out[c] = join(m, p)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no mounted cgroup hierarchy holds it")
	}
	return out, nil
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

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
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
