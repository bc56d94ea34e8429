package gavel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/synergy-sched/synergy/scheduler/gavel/lp"
)

// Prices are per-GPU-type hourly prices (per GPU), optionally changing
// over simulated time (spot prices). Gavel charges each micro-task
// price × execution time × scale factor at the price in effect when its
// round began (scheduler.py: _update_per_worker_type_prices each round,
// _job_cost_so_far in _done_callback), and its cost policies read the
// current prices.
//
// The file format (JSON, unknown fields refused):
//
//	{"unit": "$/GPU-hour",
//	 "types": {"v100": 2.48, "p100": 1.46, "k80": 0.45},
//	 "changes": [{"at_s": 7200, "types": {"v100": 0.74}}]}
//
// Every type of the cluster needs a price in "types"; a change at at_s
// (seconds of simulated time, increasing) sets the prices it names from
// then on.
type Prices struct {
	Unit    string             `json:"unit,omitempty"`
	Types   map[string]float64 `json:"types"`
	Changes []PriceChange      `json:"changes,omitempty"`
}

// PriceChange sets some types' prices from AtS on.
type PriceChange struct {
	AtS   float64            `json:"at_s"`
	Types map[string]float64 `json:"types"`
}

// ParsePrices reads and checks a price file; errors name the field.
func ParsePrices(r io.Reader) (*Prices, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var p Prices
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	if len(p.Types) == 0 {
		return nil, errors.New("prices: types: no prices given")
	}
	if err := checkPriceMap("types", p.Types); err != nil {
		return nil, err
	}
	last := math.Inf(-1)
	for i, c := range p.Changes {
		field := fmt.Sprintf("changes[%d]", i)
		if !(c.AtS >= 0) || math.IsInf(c.AtS, 0) || c.AtS <= last {
			return nil, fmt.Errorf("prices: %s.at_s = %v: want finite, ≥ 0 and after the previous change", field, c.AtS)
		}
		last = c.AtS
		if len(c.Types) == 0 {
			return nil, fmt.Errorf("prices: %s.types: no prices given", field)
		}
		if err := checkPriceMap(field+".types", c.Types); err != nil {
			return nil, err
		}
		for t := range c.Types {
			if _, ok := p.Types[t]; !ok {
				return nil, fmt.Errorf("prices: %s.types.%s: type has no initial price in types", field, t)
			}
		}
	}
	return &p, nil
}

func checkPriceMap(field string, m map[string]float64) error {
	for _, t := range sortedKeys(m) {
		if v := m[t]; !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("prices: %s.%s = %v: want a finite price > 0", field, t, v)
		}
	}
	return nil
}

// Check says whether every one of types has a price.
func (p *Prices) Check(types []string) error {
	var missing []string
	for _, t := range types {
		if _, ok := p.Types[t]; !ok {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("prices: types: no price for %s (the cluster's types: %s)", strings.Join(missing, ", "), strings.Join(types, ", "))
	}
	return nil
}

// At is the price of type t in effect at time nowS.
func (p *Prices) At(t string, nowS float64) float64 {
	v := p.Types[t]
	for _, c := range p.Changes {
		if c.AtS > nowS {
			break
		}
		if x, ok := c.Types[t]; ok {
			v = x
		}
	}
	return v
}

// CostPolicyName is the policy that reads the prices (Gavel's
// ThroughputNormalizedByCostSum_Perf): it needs a price file.
const CostPolicyName = lp.MaxSumThroughputPerCostPerf

// CostSLOPolicyName is the cost policy with SLO constraints (Gavel's
// ThroughputNormalizedByCostSum_PerfSLOs): it needs a price file too.
const CostSLOPolicyName = lp.MaxSumThroughputPerCostPerfSLOs

// NeedsPrices says whether a policy reads the price file.
func NeedsPrices(policy string) bool { return policy == CostPolicyName || policy == CostSLOPolicyName }
