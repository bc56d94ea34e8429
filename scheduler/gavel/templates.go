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
