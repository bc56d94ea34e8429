// Package gavel is Gavel (Narayanan et al., OSDI'20) rebuilt: its simulator's
// round mechanism and its policies on typed GPU clusters. It owns the cluster
// spec (`V:P:K` counts or a cluster JSON with gpu_type), Gavel's throughputs
// and trace formats, its 26 job templates and generator (a CPython-exact
// Mersenne Twister, so a seed draws Gavel's jobs), the mechanism of
// scheduler.py's simulate (allocation reset at most every 1920 s,
// priorities = allocation / share received, deficits, lease extension,
// strided placement; a window of job ids ends a run when its jobs are done,
// as is_done does), an ideal fluid mode, and the non-LP policies (fifo,
// fifo_perf, isolated, proportional, gandiva, allox), job by job equal to
// Gavel's simulator; the LP policies are solved by scheduler/gavel/lp.
// Run simulates one policy, Sweep many in parallel, on the loop and with the
// result type both engines share (scheduler/simcore: Loop, Result);
// docs/gavel.md records what matches Gavel and how it was checked.
package gavel
