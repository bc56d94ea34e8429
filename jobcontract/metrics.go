package jobcontract

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Iteration is one line of a job's metrics stream. Epoch and StepIntendedS
// are optional keys: nil when the line does not carry them.
type Iteration struct {
	Iter          int      `json:"iter"`
	Samples       int      `json:"samples"`
	DataWaitS     float64  `json:"data_wait_s"`
	StepS         float64  `json:"step_s"`
	TS            float64  `json:"ts"`
	Epoch         *int     `json:"epoch,omitempty"`
	StepIntendedS *float64 `json:"step_intended_s,omitempty"`
	Emulated      bool     `json:"emulated,omitempty"`
	// EmulatedGPU names the GPU type whose measured step an emulated step
	// waited for ("v100"); empty for a real step or a fixed wait.
	EmulatedGPU string `json:"emulated_gpu,omitempty"`
}

// MaxEmulatedGPU bounds emulated_gpu: a GPU type's name ("v100"), not a
// place for a job to store kilobytes in every line the profiler keeps.
const MaxEmulatedGPU = 64

// requiredKeys are the keys every metrics line must carry.
var requiredKeys = []string{"iter", "samples", "data_wait_s", "step_s", "ts"}

// DecodeIteration decodes one metrics line: a JSON object with every
// required key, each of its type. It does not check the values (see
// ParseIteration). Errors name the key.
func DecodeIteration(line []byte) (Iteration, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return Iteration{}, fmt.Errorf("not a JSON object: %w", err)
	}
	for _, k := range requiredKeys {
		if _, ok := raw[k]; !ok {
			return Iteration{}, fmt.Errorf("missing key %q", k)
		}
	}
	var it Iteration
	if err := json.Unmarshal(line, &it); err != nil {
		return Iteration{}, err
	}
	return it, nil
}

// ParseIteration decodes one metrics line and checks its values: counts
// and durations not negative, ts a positive Unix time. Errors name the key.
func ParseIteration(line []byte) (Iteration, error) {
	it, err := DecodeIteration(line)
	if err != nil {
		return it, err
	}
	return it, it.Check()
}

// Check reports the first value that breaks the contract.
func (it Iteration) Check() error {
	switch {
	case it.Iter < 0:
		return fmt.Errorf("iter: %d is negative", it.Iter)
	case it.Samples < 0:
		return fmt.Errorf("samples: %d is negative", it.Samples)
	case badDuration(it.DataWaitS):
		return fmt.Errorf("data_wait_s: %v is not a non-negative number", it.DataWaitS)
	case badDuration(it.StepS):
		return fmt.Errorf("step_s: %v is not a non-negative number", it.StepS)
	case badDuration(it.TS) || it.TS == 0:
		return fmt.Errorf("ts: %v is not a positive Unix time", it.TS)
	case it.Epoch != nil && *it.Epoch < 0:
		return fmt.Errorf("epoch: %d is negative", *it.Epoch)
	case len(it.EmulatedGPU) > MaxEmulatedGPU:
		return fmt.Errorf("emulated_gpu: %d bytes, above the %d a GPU type's name may hold", len(it.EmulatedGPU), MaxEmulatedGPU)
	}
	return nil
}

func badDuration(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) || x < 0 }

// AppendIteration appends it as one metrics line with its trailing newline,
// keys in the order of docs/job-contract.md, optional keys only when set
// (emulated always). Seconds carry 6 decimals (µs); a NaN or infinite
// number is written as 0, so the line is always valid JSON. It allocates
// nothing when b has room, for a training loop writing every iteration.
func AppendIteration(b []byte, it Iteration) []byte {
	b = append(b, `{"iter":`...)
	b = strconv.AppendInt(b, int64(it.Iter), 10)
	b = append(b, `,"samples":`...)
	b = strconv.AppendInt(b, int64(it.Samples), 10)
	b = append(b, `,"data_wait_s":`...)
	b = appendSeconds(b, it.DataWaitS)
	b = append(b, `,"step_s":`...)
	b = appendSeconds(b, it.StepS)
	b = append(b, `,"ts":`...)
	b = appendSeconds(b, it.TS)
	if it.Epoch != nil {
		b = append(b, `,"epoch":`...)
		b = strconv.AppendInt(b, int64(*it.Epoch), 10)
	}
	if it.StepIntendedS != nil {
		b = append(b, `,"step_intended_s":`...)
		b = appendSeconds(b, *it.StepIntendedS)
	}
	b = append(b, `,"emulated":`...)
	b = strconv.AppendBool(b, it.Emulated)
	if it.EmulatedGPU != "" {
		b = append(b, `,"emulated_gpu":`...)
		b = strconv.AppendQuote(b, it.EmulatedGPU)
	}
	return append(b, "}\n"...)
}

func appendSeconds(b []byte, s float64) []byte {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		s = 0
	}
	return strconv.AppendFloat(b, s, 'f', 6, 64)
}
