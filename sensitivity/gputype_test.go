package sensitivity

import "testing"

func TestGPUTypeFromDevice_NVMLNames(t *testing.T) {
	for _, c := range []struct{ device, want string }{
		{"Tesla V100-SXM2-16GB", "v100"},
		{"Tesla P100-PCIE-16GB", "p100"},
		{"Tesla K80", "k80"},
		{"NVIDIA A100-SXM4-80GB", "a100"},
		{"NVIDIA H100 80GB HBM3", "h100"},
		{"NVIDIA L40S", "l40s"},
		{"Tesla T4", "t4"},
		{"NVIDIA GeForce RTX 3090", "rtx3090"}, // digits only: joined to the word before
		{"NVIDIA 3090", "3090"},                // ... unless that word is the vendor's
		{"Some Accelerator", "some-accelerator"},
		{"", ""},
	} {
		if got := GPUTypeFromDevice(c.device); got != c.want {
			t.Errorf("GPUTypeFromDevice(%q) = %q, want %q", c.device, got, c.want)
		}
	}
}

func TestGavelGPUType_PrefersRecordedType(t *testing.T) {
	p := &Profile{GPU: GPUInfo{Mode: GPUModeNVML, Devices: []string{"Tesla V100-SXM2-16GB"}}}
	if got := GavelGPUType(p); got != "tesla-v100-sxm2-16gb" {
		t.Errorf("without gpu.type: %q, want the device name dashed (as before)", got)
	}
	p.GPU.Type = "v100"
	if got := GavelGPUType(p); got != "v100" {
		t.Errorf("with gpu.type v100: %q", got)
	}
	e := &Profile{GPU: GPUInfo{Mode: GPUModeEmulated, Type: "k80"}}
	if got := GavelGPUType(e); got != "k80" {
		t.Errorf("emulated k80: %q", got)
	}
}
