package sensitivity

import "fmt"

// Fill fits p, replaces every unmeasured cell of the grid with a
// prediction (Measured=false), sets p.Fit, and sets p.Validation from the
// PhaseValidate cells (predicted vs measured: MAPE, worst cell) with the
// MinIO baseline's MAPE beside ours. Measured cells keep their measurement.
// On error the predicted cells are removed and p.Fit is left alone.
func Fill(p *Profile) error {
	kept := p.Cells[:0]
	for _, c := range p.Cells {
		if c.Measured {
			kept = append(kept, c)
		}
	}
	p.Cells = kept
	f, err := FitProfile(p)
	if err != nil {
		return err
	}
	for _, c := range p.Axes.CPUs {
		for _, m := range p.Axes.MemLimitBytes {
			if p.Cell(c, m) != nil {
				continue
			}
			v, ci := f.Predict(c, m)
			p.Cells = append(p.Cells, Cell{CPUs: c, MemLimitBytes: m, SamplesPerS: v, SamplesPerSCI95: ci})
		}
	}
	p.SortCells()
	info := f.Info()
	p.Fit = &info
	if v := validateWith(p, f); v != nil {
		p.Validation = v
	}
	return nil
}

// LoadFilled loads the profile at path (strictly: a malformed profile is
// refused with the field named) and fills its grid when cells are missing.
// Errors of the fit name the path.
func LoadFilled(path string) (*Profile, error) {
	p, err := Load(path)
	if err != nil {
		return nil, err
	}
	if !p.Complete() {
		if err := Fill(p); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return p, nil
}
