// Package report owns the figures drawn from a profile: the heatmap of a
// job's throughput over its CPU × memory grid (gonum/plot, PNG or SVG by
// the file's extension), with measured cells marked and every cell labelled
// with its value. It reads sensitivity.Profile and draws nothing else;
// scheduler/plot draws the simulator's figures.
package report
