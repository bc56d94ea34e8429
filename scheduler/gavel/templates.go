package gavel

import "github.com/synergy-sched/synergy/models/zoo"

// Template is one of Gavel's job templates (its job_table.py): a model at
// a batch size, the command a physical cluster runs for it (with %s for
// the run directory), and whether it may run on several GPUs.
type Template struct {
	Model        string
	Command      string
	WorkingDir   string
	NumStepsArg  string
	NeedsDataDir bool
	Distributed  bool
}

// Templates is Gavel's job table: 26 templates, in Gavel's order (the
// generator draws uniformly by index, so the order is part of the data).
// The data lives in the model zoo (zoo.GavelTemplates); this is its view
// for the generator.
var Templates = buildTemplates()

func buildTemplates() []Template {
	var ts []Template
	for _, z := range zoo.GavelTemplates() {
		ts = append(ts, Template{Model: z.Name, Command: z.Command, WorkingDir: z.WorkingDir, NumStepsArg: z.NumStepsArg,
			NeedsDataDir: z.NeedsDataDir, Distributed: z.Distributed})
	}
	return ts
}

// ZooTemplates returns the zoo's Gavel templates with their isolated
// throughputs from t: for every scale factor the file gives a template,
// its steps/s on each GPU type that has it. A template the file lacks gets
// no entry (Throughputs nil); nothing is invented for it.
func ZooTemplates(t *Throughputs) []zoo.GavelTemplate {
	ts := zoo.GavelTemplates()
	for i := range ts {
		for _, wt := range sortedKeys(t.Isolated) {
			for jt, v := range t.Isolated[wt] {
				if jt.Model != ts[i].Name {
					continue
				}
				if ts[i].Throughputs == nil {
					ts[i].Throughputs = map[int]map[string]float64{}
				}
				if ts[i].Throughputs[jt.ScaleFactor] == nil {
					ts[i].Throughputs[jt.ScaleFactor] = map[string]float64{}
				}
				ts[i].Throughputs[jt.ScaleFactor][wt] = v
			}
		}
	}
	return ts
}

// zooTemplate is one template of ZooTemplates, found by its job type
// name; an unknown name is the zoo's error.
func zooTemplate(t *Throughputs, name string) (zoo.GavelTemplate, error) {
	for _, z := range ZooTemplates(t) {
		if z.Name == name {
			return z, nil
		}
	}
	_, err := zoo.LookupGavel(name)
	return zoo.GavelTemplate{}, err
}
