// Package plot draws simulation results with gonum/plot (the only package
// of this module that imports it): the JCT CDF comparing the runs of a
// sweep (one line per strategy × policy, and load and seed when they vary)
// and the cluster's allocated GPU, CPU and memory over simulated time. The
// format follows the file name's extension (.png, .svg, .pdf, ...); sizes
// are fixed so the same result draws the same picture (SVG output is
// byte-identical on a re-run).
package plot
