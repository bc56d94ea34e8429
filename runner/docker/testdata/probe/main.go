// Command probe is the test job of runner/docker: built static
// (CGO_ENABLED=0) into a FROM scratch image, it reports what the container
// sees — its cpuset, CFS quota, memory limit, read limit, /dev/shm size, the
// dataset mount — writes a line to $SYNERGY_METRICS_FILE, and can allocate
// memory past its limit, exit with a code, or block until killed.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	data := flag.String("data", "", "dataset directory: print its hello.txt")
	allocMiB := flag.Int("alloc-mib", 0, "allocate and touch this many MiB")
	exit := flag.Int("exit", 0, "exit code")
	sleep := flag.Bool("sleep", false, "block until killed")
	flag.Parse()

	fmt.Printf("cpus=%s\n", statusField("Cpus_allowed_list"))
	fmt.Printf("quota=%s\n", firstFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu.max"))
	fmt.Printf("memlimit=%s\n", firstFile("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"))
	fmt.Printf("swaplimit=%s\n", firstFile("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", "/sys/fs/cgroup/memory.swap.max"))
	fmt.Printf("readbps=%s\n", strings.ReplaceAll(firstFile("/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device", "/sys/fs/cgroup/io.max"), "\n", ";"))
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err == nil {
		fmt.Printf("shm=%d\n", st.Blocks*uint64(st.Bsize))
	}
	fmt.Printf("point=%s\n", os.Getenv("SYNERGY_POINT"))
	fmt.Printf("args=%s\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintln(os.Stderr, "probe: stderr line")
	if *data != "" {
		b, err := os.ReadFile(filepath.Join(*data, "hello.txt"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(2)
		}
		fmt.Printf("data=%s\n", strings.TrimSpace(string(b)))
		werr := os.WriteFile(filepath.Join(*data, "probe-wrote-here"), nil, 0o644)
		fmt.Printf("data_readonly=%t\n", errors.Is(werr, syscall.EROFS))
	}
	if p := os.Getenv("SYNERGY_METRICS_FILE"); p != "" {
		line := fmt.Sprintf(`{"iter":0,"samples":1,"data_wait_s":0,"step_s":0,"ts":%.6f}`+"\n", float64(time.Now().UnixNano())/1e9)
		if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(2)
		}
		fmt.Printf("metrics=%s\n", p)
	}
	if *allocMiB > 0 {
		var keep [][]byte
		for i := 0; i < *allocMiB; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		fmt.Printf("allocated=%d\n", len(keep))
	}
	if *sleep {
		fmt.Println("sleeping")
		for {
			time.Sleep(time.Hour)
		}
	}
	os.Exit(*exit)
}

func statusField(key string) string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func firstFile(paths ...string) string {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return "?"
}
