package simcore

// WindowCount counts a window's jobs as they arrive and finish, so that an
// engine knows in constant time when its window is done (a run with a
// window ends then: Synergy's series_id_filter, Gavel's is_done on
// jobs_to_complete).
type WindowCount struct {
	Window Window
	// Seen counts the window's jobs that arrived, Done those that
	// finished (or were dropped).
	Seen, Done int
}

// Arrive counts job id's arrival.
func (c *WindowCount) Arrive(id int) {
	if c.Window.Has(id) {
		c.Seen++
	}
}

// Finish counts job id's end (finished or dropped).
func (c *WindowCount) Finish(id int) {
	if c.Window.Has(id) {
		c.Done++
	}
}

// Complete reports whether the window is done: every one of its jobs
// arrived and ended, or — when closed says no more of its jobs can arrive
// (the workload has ended, or has moved past the window's last id) —
// every one that did arrive, at least one, has ended.
func (c *WindowCount) Complete(closed bool) bool {
	if c.Seen == 0 || c.Done != c.Seen {
		return false
	}
	return closed || c.Seen == c.Window.Size(0)
}
