package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// systemdTimeout bounds each call to systemd and the wait for its job.
const systemdTimeout = 30 * time.Second

// systemd is a connection to the host's systemd over D-Bus: its private
// socket as root (no bus daemon needed), else the system bus. It is made
// on first use and remade after the connection drops.
type systemd struct {
	mu   sync.Mutex
	conn *sddbus.Conn
}

func (s *systemd) get(ctx context.Context) (*sddbus.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && s.conn.Connected() {
		return s.conn, nil
	}
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	c, err := sddbus.NewSystemdConnectionContext(ctx)
	if err != nil {
		var err2 error
		if c, err2 = sddbus.NewSystemConnectionContext(ctx); err2 != nil {
			return nil, fmt.Errorf("connect to systemd: private socket: %v; system bus: %w", err, err2)
		}
	}
	s.conn = c
	return c, nil
}

func (s *systemd) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// startScope starts a transient scope unit holding pid, in slice, with
// Delegate=yes (the subtree below the scope's cgroup is the caller's to
// manage) and garbage-collected even when it failed. It returns the
// scope's cgroup, relative to the hierarchy root.
func (s *systemd) startScope(unit, slice string, pid int, desc string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), systemdTimeout)
	defer cancel()
	c, err := s.get(ctx)
	if err != nil {
		return "", err
	}
	props := []sddbus.Property{
		sddbus.PropDescription(desc),
		sddbus.PropSlice(slice),
		sddbus.PropPids(uint32(pid)),
		{Name: "Delegate", Value: godbus.MakeVariant(true)},
		{Name: "DefaultDependencies", Value: godbus.MakeVariant(false)},
		{Name: "CollectMode", Value: godbus.MakeVariant("inactive-or-failed")},
		{Name: "CPUAccounting", Value: godbus.MakeVariant(true)},
		{Name: "MemoryAccounting", Value: godbus.MakeVariant(true)},
		{Name: "IOAccounting", Value: godbus.MakeVariant(true)},
	}
	done := make(chan string, 1)
	if _, err := c.StartTransientUnitContext(ctx, unit, "fail", props, done); err != nil {
		return "", fmt.Errorf("systemd: start scope %s in %s: %w", unit, slice, err)
	}
	if err := waitJob(ctx, done, "start scope "+unit); err != nil {
		return "", err
	}
	p, err := c.GetUnitTypePropertyContext(ctx, unit, "Scope", "ControlGroup")
	if err != nil {
		return "", fmt.Errorf("systemd: cgroup of scope %s: %w", unit, err)
	}
	cg, ok := p.Value.Value().(string)
	if !ok || !strings.HasPrefix(cg, "/") {
		return "", fmt.Errorf("systemd: scope %s has no cgroup (ControlGroup=%v)", unit, p.Value)
	}
	return cg, nil
}

// stopUnit stops unit and waits for it, then forgets it if it failed. A
// unit systemd no longer knows is already stopped.
func (s *systemd) stopUnit(unit string) error {
	ctx, cancel := context.WithTimeout(context.Background(), systemdTimeout)
	defer cancel()
	c, err := s.get(ctx)
	if err != nil {
		return err
	}
	done := make(chan string, 1)
	if _, err := c.StopUnitContext(ctx, unit, "replace", done); err != nil {
		if noSuchUnit(err) {
			return nil
		}
		return fmt.Errorf("systemd: stop %s: %w", unit, err)
	}
	err = waitJob(ctx, done, "stop "+unit)
	if rerr := c.ResetFailedUnitContext(ctx, unit); rerr != nil && !noSuchUnit(rerr) && !notFailed(rerr) {
		err = errors.Join(err, fmt.Errorf("systemd: reset-failed %s: %w", unit, rerr))
	}
	return err
}

func waitJob(ctx context.Context, done <-chan string, what string) error {
	select {
	case res := <-done:
		if res != "done" {
			return fmt.Errorf("systemd: %s: job %s", what, res)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("systemd: %s: no answer within %v", what, systemdTimeout)
	}
}

func noSuchUnit(err error) bool {
	var de godbus.Error
	return errors.As(err, &de) && de.Name == "org.freedesktop.systemd1.NoSuchUnit"
}

func notFailed(err error) bool {
	var de godbus.Error
	return errors.As(err, &de) && strings.HasSuffix(de.Name, "NotFailed")
}
