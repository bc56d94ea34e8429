package local

import (
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

func ptr[T any](v T) *T { return &v }

func TestPlanFor_Limits(t *testing.T) {
	online := []int{0, 1, 2, 3}
	disk := cgroupfs.Dev{Major: 254, Minor: 0}
	tests := []struct {
		name    string
		limits  runner.Limits
		noSwap  bool
		want    plan
		wantErr string
	}{
		{name: "no limits", want: plan{}},
		{name: "fractional cpus",
			// ceil(1.5) = 2 cores; quota 1.5 × 100000 = 150000us
			limits: runner.Limits{CPUs: 1.5},
			want:   plan{CPUSet: []int{0, 1}, QuotaUS: 150000, PeriodUS: 100000}},
		{name: "explicit cpuset, unsorted",
			limits: runner.Limits{CPUs: 2, CPUSet: []int{3, 2}},
			want:   plan{CPUSet: []int{2, 3}, QuotaUS: 200000, PeriodUS: 100000}},
		{name: "cpuset without budget: no quota",
			limits: runner.Limits{CPUSet: []int{1}},
			want:   plan{CPUSet: []int{1}}},
		{name: "memory with swap accounting",
			limits: runner.Limits{MemLimitBytes: 1 << 30}, noSwap: true,
			want: plan{MemLimitBytes: 1 << 30, NoSwap: true}},
		{name: "read throttle",
			limits: runner.Limits{ReadBPS: 16e6, ReadBPSPath: "/data"},
			want:   plan{ReadBPS: 16e6, ReadDev: disk}},
		{name: "too many cpus", limits: runner.Limits{CPUs: 5}, wantErr: "needs 5 cores but only 4"},
		{name: "negative cpus", limits: runner.Limits{CPUs: -1}, wantErr: "cpus=-1"},
		{name: "cpuset off-line", limits: runner.Limits{CPUSet: []int{7}}, wantErr: "CPU 7"},
		{name: "cpuset too small", limits: runner.Limits{CPUs: 3, CPUSet: []int{0, 1}}, wantErr: "needs 3 cores but cpuset 0-1 has 2"},
		{name: "empty cpuset", limits: runner.Limits{CPUSet: []int{}}, wantErr: "cpuset is empty"},
		{name: "quota below 1ms", limits: runner.Limits{CPUs: 0.005}, wantErr: "below the kernel's minimum"},
		{name: "negative memory", limits: runner.Limits{MemLimitBytes: -1}, wantErr: "memory limit"},
		{name: "read limit without path", limits: runner.Limits{ReadBPS: 1}, wantErr: "without the path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planFor(tt.limits, online, disk, tt.noSwap)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plan = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestV1Resources_Plans(t *testing.T) {
	tests := []struct {
		name string
		plan plan
		want *specs.LinuxResources
	}{
		{"nothing", plan{}, &specs.LinuxResources{}},
		{"cpus", plan{CPUSet: []int{0, 1, 3}, QuotaUS: 250000, PeriodUS: 100000},
			&specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "0-1,3", Quota: ptr[int64](250000), Period: ptr[uint64](100000)}}},
		{"cpuset only", plan{CPUSet: []int{2}},
			&specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "2"}}},
		{"memory, swap accounted", plan{MemLimitBytes: 64 << 20, NoSwap: true},
			&specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr[int64](64 << 20), Swap: ptr[int64](64 << 20)}}},
		{"memory, no swap accounting", plan{MemLimitBytes: 64 << 20},
			&specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr[int64](64 << 20)}}},
		{"read throttle", plan{ReadBPS: 16000000, ReadDev: cgroupfs.Dev{Major: 254, Minor: 0}},
			&specs.LinuxResources{BlockIO: &specs.LinuxBlockIO{ThrottleReadBpsDevice: []specs.LinuxThrottleDevice{
				{LinuxBlockIODevice: specs.LinuxBlockIODevice{Major: 254, Minor: 0}, Rate: 16000000}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := v1Resources(tt.plan); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("v1Resources = %s, want %s", dump(got), dump(tt.want))
			}
		})
	}
}

func TestV2Resources_Plans(t *testing.T) {
	tests := []struct {
		name            string
		plan            plan
		want            *cgroup2.Resources
		wantControllers []string
	}{
		{"nothing", plan{}, &cgroup2.Resources{}, nil},
		{"cpus", plan{CPUSet: []int{0, 1}, QuotaUS: 150000, PeriodUS: 100000},
			&cgroup2.Resources{CPU: &cgroup2.CPU{Cpus: "0-1", Max: "150000 100000"}}, []string{"cpu", "cpuset"}},
		{"memory, swap accounted", plan{MemLimitBytes: 1 << 30, NoSwap: true},
			&cgroup2.Resources{Memory: &cgroup2.Memory{Max: ptr[int64](1 << 30), Swap: ptr[int64](0)}}, []string{"memory"}},
		{"read throttle", plan{ReadBPS: 50000000, ReadDev: cgroupfs.Dev{Major: 8, Minor: 0}},
			&cgroup2.Resources{IO: &cgroup2.IO{Max: []cgroup2.Entry{{Type: cgroup2.ReadBPS, Major: 8, Minor: 0, Rate: 50000000}}}},
			[]string{"io"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := v2Resources(tt.plan)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("v2Resources = %s, want %s", dump(got), dump(tt.want))
			}
			if c := got.EnabledControllers(); !reflect.DeepEqual(c, tt.wantControllers) {
				t.Errorf("controllers = %v, want %v", c, tt.wantControllers)
			}
		})
	}
	// The io.max line the kernel gets.
	e := v2Resources(plan{ReadBPS: 16000000, ReadDev: cgroupfs.Dev{Major: 254, Minor: 0}}).IO.Max[0]
	if got := e.String(); got != "254:0 rbps=16000000" {
		t.Errorf("io.max line = %q, want %q", got, "254:0 rbps=16000000")
	}
}

// dump shows resources with pointers followed.
func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func TestSanitizeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"resnet18", "resnet18"},
		{"my job/../x", "my_job_.._x"},
		{".hidden", "_hidden"},
		{"", "job"},
		{strings.Repeat("a", 100), strings.Repeat("a", 40)},
	}
	for _, tt := range tests {
		if got := sanitizeName(tt.in); got != tt.want {
			t.Errorf("sanitizeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestGate_Usage(t *testing.T) {
	if got := gate(nil, io.Discard); got != gateExitUsage {
		t.Errorf("gate() = %d, want %d", got, gateExitUsage)
	}
	if got := gate([]string{"true"}, io.Discard); got != gateExitUsage {
		t.Errorf("gate(true) = %d, want %d (missing --)", got, gateExitUsage)
	}
	if !IsGate([]string{"synergy", GateArg, "--", "x"}) || IsGate([]string{"synergy", "profile"}) || IsGate(nil) {
		t.Error("IsGate misclassifies")
	}
}
