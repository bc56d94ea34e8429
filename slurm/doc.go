// Package slurm is the bridge between profiles and a real Slurm cluster:
// it reads the nodes (sinfo --json) and the queue (squeue --json), places
// the held jobs that opted in with scheduler.PlaceQueue (what
// `synergy schedule` runs), and pins each placed job's node, GPUs, CPUs and
// memory with scontrol before releasing it. A job that does not fit stays
// held with the reason in its comment. Every call to Slurm is an argv
// array run through a Commander, never a shell string.
//
// The job's comment carries the bridge's state (see Mark): the profile
// (synergy:profile=PATH), and then either the placement it was given
// (synergy:placed=...) or why it waits (synergy:waiting=...). The
// placement is written in the same scontrol update that pins the
// resources, before the release, so a bridge that stops between the two
// finds the job placed on its next pass, counts its resources as taken
// and releases it: nothing is lost or booked twice.
package slurm
