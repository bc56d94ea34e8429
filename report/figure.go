package report

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/synergy-sched/synergy/internal/atomicfile"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// writePlot renders pl at width × height in format to w; errors say what
// was being drawn.
func writePlot(w io.Writer, pl *gplot.Plot, width, height vg.Length, format, what string) error {
	wt, err := pl.WriterTo(width, height, format)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("%s: write: %w", what, err)
	}
	return nil
}

// saveAtomic draws to path in the format formatOf gives for it, through a
// temporary file so a reader never sees half a figure (and a failed draw
// leaves no file).
func saveAtomic(path, what string, formatOf func(string) (string, error), draw func(w io.Writer, format string) error) error {
	format, err := formatOf(path)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := draw(&b, format); err != nil {
		return err
	}
	if err := atomicfile.Write(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	return nil
}

// FormatOf is a file name's figure format for the simulator's figures:
// its extension, lower case, one gonum/plot writes (.png, .svg, .pdf,
// .eps, .jpg, .tif).
func FormatOf(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	switch ext {
	case "png", "svg", "pdf", "eps", "jpg", "jpeg", "tif", "tiff":
		return ext, nil
	case "":
		return "", fmt.Errorf("%s: no extension to choose the format by (.png, .svg, .pdf)", path)
	}
	return "", fmt.Errorf("%s: unknown plot format %q (.png, .svg, .pdf, .eps, .jpg, .tif)", path, ext)
}

// ProfileFormatOf returns the format of a profile's figures (heatmap,
// timeline) by path's extension: png or svg.
func ProfileFormatOf(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		return FormatPNG, nil
	case ".svg":
		return FormatSVG, nil
	}
	return "", fmt.Errorf("%s: the heatmap is written as .png or .svg", path)
}
