// Package zoo holds Synergy's model zoo: for each of the ten single-GPU
// models the OSDI'22 simulator ships (msr-fiddle/synergy, MIT,
// simulator/models/*_1.py), its class, its 9×5 table of throughput
// normalised to the GPU-proportional share, the ideal CPUs and memory per
// GPU, the speed-up there, the fair-share iteration time and the batch size.
// Each model is exposed as a sensitivity.Matrix (per GPU, unit
// "normalized") plus those four scalars.
//
// Units: the original counts memory in bare "GB" on a 500-GB server; only
// ratios matter to it (62.5 = 500/8). We read GB as decimal gigabytes
// (1 GB = 1e9 bytes), so every grid point is a whole number of bytes and
// 62.5 GB per GPU is exactly 62,500,000,000 bytes.
package zoo
