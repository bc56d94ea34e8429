package cgroupfs

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/runner"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func TestParseUint(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"149653332602\n", 149653332602, false},
		{"  7 \n", 7, false},
		{"", 0, true},
		{"max\n", 0, true},
		{"-1\n", 0, true},
	}
	for _, tt := range tests {
		got, err := parseUint([]byte(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseUint(%q) = %d, %v; want %d, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestScanKeyed(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]uint64
		wantErr string
	}{
		{"plain", "nr_periods 10\nnr_throttled 2\n", map[string]uint64{"nr_periods": 10, "nr_throttled": 2}, ""},
		{"blank lines and no final newline", "\na 1\n\nb 2", map[string]uint64{"a": 1, "b": 2}, ""},
		{"not a number", "a 1\nb x\n", nil, `line 2: "b x"`},
		{"no value", "a 1\nb\n", nil, `line 2: "b" is not "key value"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]uint64{}
			err := scanKeyed([]byte(tt.in), func(k []byte, v uint64) { got[string(k)] = v })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestSumRead(t *testing.T) {
	tests := []struct {
		name    string
		fn      func([]byte) (uint64, int, error)
		in      string
		want    uint64
		wantErr bool
	}{
		// 1048576 + 8192 = 1056768; Write, Sync, Total lines ignored.
		{"blkio two devices", sumBlkioRead, "254:0 Read 1048576\n254:0 Write 4096\n254:0 Total 1052672\n253:0 Read 8192\nTotal 1060864\n", 1056768, false},
		{"blkio not accounted", sumBlkioRead, "Total 0\n", 0, false},
		{"blkio bad", sumBlkioRead, "254:0 Read lots\n", 0, true},
		// 419430400 + 1024 = 419431424
		{"io.stat two devices", ioStatSum, "254:0 rbytes=419430400 wbytes=0 rios=400\n253:0 rbytes=1024 wbytes=2048\n", 419431424, false},
		{"io.stat empty", ioStatSum, "", 0, false},
		{"io.stat bad", ioStatSum, "254:0 rbytes=-5\n", 0, true},
	}
	for _, tt := range tests {
		got, _, err := tt.fn([]byte(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("%s: got %d, %v; want %d, err=%v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func ioStatSum(b []byte) (uint64, int, error) {
	v, err := sumIOStatRead(b)
	return v, 0, err
}

// TestParseBlkio_NotAccounted: a v1 blkio file without device lines is
// "no data", not zero bytes read.
func TestParseBlkio_NotAccounted(t *testing.T) {
	var c runner.Stats
	if err := parseBlkio([]byte("Total 0\n"), &c); err != nil || c.Has&runner.StatIORead != 0 {
		t.Errorf("has io = %v, err = %v; want absent, nil", c.Has&runner.StatIORead != 0, err)
	}
	if err := parseBlkio([]byte("8:0 Read 0\n8:0 Total 0\nTotal 0\n"), &c); err != nil || c.Has&runner.StatIORead == 0 {
		t.Errorf("a device line with 0 bytes: has io = %v, err = %v; want present", c.Has&runner.StatIORead != 0, err)
	}
}

func TestReader_Testdata(t *testing.T) {
	v1 := filepath.Join("testdata", "v1")
	tests := []struct {
		name  string
		paths map[string]string
		want  runner.Stats
	}{
		{"v1", map[string]string{KeyCPU: v1, KeyCPUAcct: v1, KeyMemory: v1, KeyBlkio: v1}, runner.Stats{
			CPUUsageSeconds:     149.653332602,  // 149653332602 ns
			CPUPeriods:          1200,           //
			CPUThrottledPeriods: 340,            //
			CPUThrottledSeconds: 25.5,           // 25500000000 ns
			MemUsageBytes:       14532608,       // memory.usage_in_bytes
			MemPeakBytes:        20971520,       // memory.max_usage_in_bytes
			MemCacheBytes:       16678912,       // total_cache: cache 12484608 + 4194304 in a child group
			MemAnonBytes:        6332416,        // total_rss: rss 2138112 + 4194304 in a child group
			OOMEvents:           0,              // memory.oom_control
			IOReadBytes:         1048576 + 8192, // Read lines of two devices
			Has:                 runner.StatCPUUsage | runner.StatCPUPeriods | runner.StatCPUThrottledPeriods | runner.StatCPUThrottledSeconds | runner.StatMemUsage | runner.StatMemPeak | runner.StatMemCache | runner.StatMemAnon | runner.StatOOMEvents | runner.StatIORead,
		}},
		{"v1 combined cpu,cpuacct", map[string]string{"cpu,cpuacct": v1}, runner.Stats{
			CPUUsageSeconds: 149.653332602, CPUPeriods: 1200, CPUThrottledPeriods: 340, CPUThrottledSeconds: 25.5,
			Has: runner.StatCPUUsage | runner.StatCPUPeriods | runner.StatCPUThrottledPeriods | runner.StatCPUThrottledSeconds,
		}},
		{"v2", map[string]string{KeyUnified: filepath.Join("testdata", "v2")}, runner.Stats{
			CPUUsageSeconds:     2.5,  // usage_usec 2500000
			CPUPeriods:          50,   //
			CPUThrottledPeriods: 20,   //
			CPUThrottledSeconds: 0.75, // throttled_usec 750000
			MemUsageBytes:       536870912,
			MemPeakBytes:        805306368,
			MemCacheBytes:       419430400, // file
			MemAnonBytes:        104857600, // anon
			OOMEvents:           1,         // memory.events oom_kill
			IOReadBytes:         419430400 + 1024,
			Has:                 runner.StatCPUUsage | runner.StatCPUPeriods | runner.StatCPUThrottledPeriods | runner.StatCPUThrottledSeconds | runner.StatMemUsage | runner.StatMemPeak | runner.StatMemCache | runner.StatMemAnon | runner.StatOOMEvents | runner.StatIORead,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Open(tt.paths)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := r.Read(t0)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Time = t0
			const tol = 1e-9
			if math.Abs(got.CPUUsageSeconds-tt.want.CPUUsageSeconds) > tol || math.Abs(got.CPUThrottledSeconds-tt.want.CPUThrottledSeconds) > tol {
				t.Errorf("seconds: got usage %v throttled %v, want %v %v", got.CPUUsageSeconds, got.CPUThrottledSeconds, tt.want.CPUUsageSeconds, tt.want.CPUThrottledSeconds)
			}
			got.CPUUsageSeconds, got.CPUThrottledSeconds = tt.want.CPUUsageSeconds, tt.want.CPUThrottledSeconds
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestReader_V2CPUStatReadOnce: usage and throttling both come from v2
// cpu.stat, which must be opened and read once per tick, not twice.
func TestReader_V2CPUStatReadOnce(t *testing.T) {
	r, err := Open(map[string]string{KeyUnified: filepath.Join("testdata", "v2")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for _, f := range r.Files() {
		if filepath.Base(f) == "cpu.stat" {
			n++
		}
	}
	if n != 1 || len(r.files[0].parses) != 1 {
		t.Errorf("cpu.stat opened %d times with %d parsers, want once with one", n, len(r.files[0].parses))
	}
}

func TestReader_MissingFilesAreNoData(t *testing.T) {
	dir := t.TempDir()
	// A v2 group on an old kernel without the io controller: no memory.peak,
	// no io.stat.
	for _, f := range []string{"cpu.stat", "memory.current", "memory.stat", "memory.events"} {
		copyFile(t, filepath.Join("testdata", "v2", f), filepath.Join(dir, f))
	}
	r, err := Open(map[string]string{KeyUnified: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := strings.Join(r.Missing(), ","); got != "memory peak,io read bytes" {
		t.Errorf("missing = %q", got)
	}
	c, err := r.Read(t0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Has&runner.StatMemPeak != 0 {
		t.Error("memory peak present without memory.peak")
	}
	if c.Has&runner.StatIORead != 0 {
		t.Error("io read bytes present without io.stat")
	}
	if c.Has&runner.StatMemCache == 0 || c.MemCacheBytes != 419430400 {
		t.Errorf("page cache = %v (has %v); want 419430400", c.MemCacheBytes, c.Has&runner.StatMemCache != 0)
	}
}

func TestReader_BadFileDoesNotHideOthers(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join("testdata", "v2", "memory.stat"), filepath.Join(dir, "memory.stat"))
	if err := os.WriteFile(filepath.Join(dir, "memory.current"), []byte("lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(map[string]string{KeyUnified: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := r.Read(t0)
	if err == nil || !strings.Contains(err.Error(), "memory.current") || !strings.Contains(err.Error(), `"lots"`) {
		t.Errorf("err = %v, want it to name memory.current and its content", err)
	}
	if c.Has&runner.StatMemCache == 0 || c.MemCacheBytes != 419430400 {
		t.Errorf("page cache not read beside the bad file: %+v", c)
	}
	if c.Has&runner.StatMemUsage != 0 {
		t.Error("bad memory.current reported as read")
	}
}

func TestReader_GrowsBuffer(t *testing.T) {
	dir := t.TempDir()
	// A memory.stat larger than the initial 16 KiB buffer, total_cache last.
	var b strings.Builder
	for i := 0; b.Len() < 40<<10; i++ {
		b.WriteString("padding_key_with_a_long_name 123456789\n")
	}
	b.WriteString("total_cache 4096\n")
	if err := os.WriteFile(filepath.Join(dir, "memory.stat"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(map[string]string{KeyMemory: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := r.Read(t0)
	if err != nil || c.MemCacheBytes != 4096 {
		t.Errorf("cache = %d, %v; want 4096 from the end of a 40 KiB file", c.MemCacheBytes, err)
	}
}

func TestOpen_Errors(t *testing.T) {
	_, err := Open(map[string]string{"pids": "/x"})
	if err == nil || !strings.Contains(err.Error(), "[pids]") {
		t.Errorf("err = %v, want it to list the keys given", err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "memory.stat"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory opens but cannot be read: that is a read error, not "missing".
	r, err := Open(map[string]string{KeyMemory: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Read(t0); err == nil || !errors.Is(err, errIsDir(t)) {
		t.Errorf("reading a directory: err = %v", err)
	}
}

// errIsDir is the error pread gives on a directory on this system.
func errIsDir(t *testing.T) error {
	t.Helper()
	f, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.ReadAt(make([]byte, 1), 0)
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func FuzzParsers(f *testing.F) {
	for _, p := range []string{"v1/memory.stat", "v1/blkio.throttle.io_service_bytes_recursive", "v2/io.stat", "v2/cpu.stat"} {
		b, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c runner.Stats
		for _, p := range []func([]byte, *runner.Stats) error{parseCPUAcctUsage, parseCPUStatV1, parseCPUStatV2, parseMemUsage, parseMemStatV1, parseMemStatV2, parseOOMKill, parseBlkio, parseIOStat} {
			_ = p(b, &c) // must not panic
		}
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadStats_V1FakeFiles(t *testing.T) {
	root := t.TempDir()
	dirs := map[string]string{}
	files := map[string]map[string]string{
		"cpu":     {"cpu.stat": "nr_periods 40\nnr_throttled 12\nthrottled_time 1500000000\nnr_bursts 0\n"},
		"cpuacct": {"cpuacct.usage": "2500000000\n"},
		"memory": {
			"memory.usage_in_bytes":     "67108864\n",
			"memory.max_usage_in_bytes": "67174400\n",
			"memory.stat":               "cache 100\nrss 200\ntotal_cache 61865984\ntotal_rss 4194304\n",
			"memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
		},
		"blkio": {"blkio.throttle.io_service_bytes": "254:0 Read 67108864\n254:0 Write 4096\n8:0 Read 10\n254:0 Total 67112960\nTotal 67112970\n"},
	}
	for c, fs := range files {
		dirs[c] = filepath.Join(root, c)
		if err := os.MkdirAll(dirs[c], 0o755); err != nil {
			t.Fatal(err)
		}
		for n, s := range fs {
			if err := os.WriteFile(filepath.Join(dirs[c], n), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	now := time.Unix(100, 0)
	got, err := ReadStats(dirs, now)
	if err != nil {
		t.Fatal(err)
	}
	want := runner.Stats{
		Time:                now,
		CPUUsageSeconds:     2.5, // 2.5e9 ns
		CPUPeriods:          40,
		CPUThrottledPeriods: 12,
		CPUThrottledSeconds: 1.5, // 1.5e9 ns
		MemUsageBytes:       67108864,
		MemPeakBytes:        67174400,
		MemCacheBytes:       61865984, // total_cache, not cache
		MemAnonBytes:        4194304,
		IOReadBytes:         67108874, // 67108864 + 10, Total lines ignored
		OOMEvents:           2,
		Has:                 runner.StatAll,
	}
	if got != want {
		t.Errorf("stats = %+v\nwant %+v", got, want)
	}
	// Missing files (controller not mounted, group gone) are absent: no
	// counter, no error.
	got, err = ReadStats(map[string]string{"memory": filepath.Join(root, "absent")}, now)
	if err != nil || got != (runner.Stats{Time: now}) {
		t.Errorf("missing files: %+v, %v; want no counters, no error", got, err)
	}
	// A garbled counter is an error that names the file.
	if err := os.WriteFile(filepath.Join(dirs["cpuacct"], "cpuacct.usage"), []byte("lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStats(dirs, now); err == nil || !strings.Contains(err.Error(), "cpuacct.usage") {
		t.Errorf("garbled counter: err = %v, want one naming cpuacct.usage", err)
	}
}

func TestReadStats_V2FakeFiles(t *testing.T) {
	dir := t.TempDir()
	for n, s := range map[string]string{
		"cpu.stat":       "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 40\nnr_throttled 12\nthrottled_usec 1500000\n",
		"memory.current": "67108864\n",
		"memory.peak":    "70000000\n",
		"memory.stat":    "anon 4194304\nfile 61865984\nkernel 100\n",
		"memory.events":  "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n",
		"io.stat":        "254:0 rbytes=67108864 wbytes=4096 rios=512 wios=1 dbytes=0 dios=0\n8:0 rbytes=10 wbytes=0 rios=1 wios=0\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(100, 0)
	got, err := ReadStats(map[string]string{KeyUnified: dir}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := runner.Stats{
		Time: now, CPUUsageSeconds: 2.5, CPUPeriods: 40, CPUThrottledPeriods: 12, CPUThrottledSeconds: 1.5,
		MemUsageBytes: 67108864, MemPeakBytes: 70000000, MemCacheBytes: 61865984, MemAnonBytes: 4194304,
		IOReadBytes: 67108874, OOMEvents: 1, Has: runner.StatAll,
	}
	if got != want {
		t.Errorf("stats = %+v\nwant %+v", got, want)
	}
}
