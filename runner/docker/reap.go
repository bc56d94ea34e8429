package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/synergy-sched/synergy/runner/owner"
)

// ownerLabels are the labels naming this process as a container's owner.
func ownerLabels() (map[string]string, error) {
	me, err := owner.Self()
	if err != nil {
		return nil, fmt.Errorf("identify this process for the %s label: %w", LabelOwner, err)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("hostname for the %s label: %w", LabelHost, err)
	}
	return map[string]string{LabelOwner: me.String(), LabelHost: host}, nil
}

// unownedGrace is how old a stopped container without an owner label (made
// by a synergy before owners were recorded) must be to count as an orphan:
// its maker may still be collecting its result.
const unownedGrace = 15 * time.Minute

// orphan says why a synergy container is to be removed, or "" to keep it:
// its owner on this host is dead, or it has no owner (made by an older
// synergy), is no longer running and was made over unownedGrace ago.
func orphan(c container.Summary, host, procRoot string, now time.Time) string {
	o, ok := c.Labels[LabelOwner]
	if !ok {
		switch {
		case c.State == container.StateRunning || c.State == container.StatePaused || c.State == container.StateRestarting:
			return ""
		case now.Sub(time.Unix(c.Created, 0)) < unownedGrace:
			return ""
		}
		return "no owner label, " + string(c.State)
	}
	if c.Labels[LabelHost] != host {
		return "" // another host's synergy: its PIDs mean nothing here
	}
	id, err := owner.Parse(o)
	if err != nil || owner.Alive(procRoot, id) {
		return ""
	}
	return fmt.Sprintf("owner PID %d is gone", id.PID)
}

// ReapOrphans kills and removes the containers of synergy processes on this
// host that are no longer alive (LabelOwner, LabelHost), and the stopped
// synergy containers that carry no owner. It returns one line per container
// removed: "container ID12 (job, point): why".
func (r *Runner) ReapOrphans(ctx context.Context) ([]string, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("find orphaned containers: hostname: %w", err)
	}
	list, err := r.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelProfile)})
	if err != nil {
		return nil, r.explain("list synergy containers", err)
	}
	var removed []string
	var errs []error
	for _, c := range list.Items {
		why := orphan(c, host, r.opts.ProcRoot, time.Now())
		if why == "" {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
		_, err := r.api.ContainerRemove(rctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		cancel()
		if removingElsewhere(err) {
			continue // another synergy run on this host is reaping it now
		}
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove orphaned container %.12s: %w", c.ID, err))
			continue
		}
		removed = append(removed, fmt.Sprintf("container %.12s (%s, %s): %s", c.ID, shownLabel(c.Labels[LabelJob]), shownLabel(c.Labels[LabelPoint]), why))
	}
	return removed, errors.Join(errs...)
}

// removingElsewhere reports whether a removal failed because another
// client (another synergy run reaping the same orphan) is removing the
// container already: the engine answers 409 "removal … already in progress".
func removingElsewhere(err error) bool {
	return err != nil && cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}

// shownLabel is a label's value as a message shows it: anyone who can make
// a container can set the labels, so a value is cut to 64 bytes and quoted
// (Go escapes) when it holds a control, bidi or other non-graphic
// character.
func shownLabel(v string) string {
	cut := ""
	if len(v) > 64 {
		v, cut = strings.ToValidUTF8(v[:64], ""), "..."
	}
	if q := strconv.QuoteToGraphic(v); q[1:len(q)-1] != v {
		return q + cut
	}
	return v + cut
}
