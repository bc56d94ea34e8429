// Package report draws every figure of synergy, and is the only package of
// this module that imports gonum/plot. From a profile: the heatmap of a
// job's throughput over its CPU × memory grid (measured cells ringed, every
// cell labelled with its value) and one point's timeline (GPU or emulated
// step, data wait and CPU use over time), as PNG or SVG. From a simulation
// (scheduler/sim): the JCT CDF comparing the runs of a sweep and the
// cluster's allocated GPU, CPU and memory over simulated time, in any
// format gonum/plot writes (.png, .svg, .pdf, ...). The format follows the
// file name's extension; sizes are fixed so the same input draws the same
// picture (SVG output is byte-identical on a re-run), and files are written
// through a temporary file so a reader never sees half a figure.
package report
