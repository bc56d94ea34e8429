package synthtrain

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// appendJSON renders the iteration as one JSON line with a trailing newline,
// in the key order of docs/job-contract.md. Seconds carry 6 decimals (µs).
func (it Iteration) appendJSON(b []byte) []byte {
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
	b = append(b, `,"epoch":`...)
	b = strconv.AppendInt(b, int64(it.Epoch), 10)
	b = append(b, `,"step_intended_s":`...)
	b = appendSeconds(b, it.StepIntendedS)
	b = append(b, `,"emulated":`...)
	b = strconv.AppendBool(b, it.Emulated)
	return append(b, "}\n"...)
}

func appendSeconds(b []byte, s float64) []byte {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		s = 0
	}
	return strconv.AppendFloat(b, s, 'f', 6, 64)
}

// ParseIteration reads one metrics line back, checking the required keys.
func ParseIteration(line []byte) (Iteration, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return Iteration{}, fmt.Errorf("parse metrics line: %w", err)
	}
	for _, k := range []string{"iter", "samples", "data_wait_s", "step_s", "ts"} {
		if _, ok := raw[k]; !ok {
			return Iteration{}, fmt.Errorf("parse metrics line: missing %q", k)
		}
	}
	var it Iteration
	if err := json.Unmarshal(line, &it); err != nil {
		return Iteration{}, fmt.Errorf("parse metrics line: %w", err)
	}
	return it, nil
}
