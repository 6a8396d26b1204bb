package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
)

// GCAgeBound is how long past its session timeout a sandbox whose owner
// cannot be proven dead (another PID namespace, an older label) is kept.
const GCAgeBound = sandbox.GCAgeBound

// GC removes agentbox containers on this engine whose owner is proven dead:
// the same kernel boot and PID namespace as this process and no process
// with the owner's pid and start time; or another boot and the container
// no longer runs. A sandbox whose owner cannot be proven dead from here
// is left alone until it is GCAgeBound older than its session timeout.
// Only the invoking user's orphans go unless o.AllOwners; the others are
// counted in the result.
func GC(ctx context.Context, eng Engine, o sandbox.GCOptions) (sandbox.GCResult, error) {
	eng = withDeadlines(eng)
	var res sandbox.GCResult
	o.Step("listing the engine's sandboxes")
	list, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return res, fmt.Errorf("%w: listing containers: %w", sandbox.ErrUnavailable, err)
	}
	type orphan struct {
		c      container.Summary
		reason string
	}
	var orphans []orphan
	othersSessions := map[string]bool{} // their volumes are counted with them
	for _, c := range list {
		if reason := gcReason(c, time.Now()); reason == "" {
			continue
		} else if !o.Covers(c.Labels) {
			res.Others++
			othersSessions[c.Labels[LabelSession]] = true
		} else {
			orphans = append(orphans, orphan{c, reason})
		}
	}
	if len(orphans) > 0 {
		o.Step(fmt.Sprintf("removing %d container(s) whose owner is gone", len(orphans)))
	}
	var sessions []string
	var errs []error
	for _, or := range orphans {
		c := or.c
		// Not found or conflict: another gc is removing it already.
		if err := eng.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			errs = append(errs, err)
			continue
		}
		removeProxyDir(c.Mounts)
		res.Removed = append(res.Removed, sandbox.Removed{ID: c.ID, Reason: or.reason})
		sessions = append(sessions, c.Labels[LabelSession])
	}
	removeMaskDirs(sessions)
	o.Step("listing the engine's sandbox volumes")
	vols, others, err := gcVolumes(ctx, eng, o, othersSessions, time.Now())
	res.Removed = append(res.Removed, vols...)
	res.Others += others
	errs = append(errs, err)
	return res, errors.Join(errs...)
}

// gcVolumes removes the engine volumes agentbox made (a copy's overlay
// workspace) whose owner is proven dead by the same rules as containers,
// when no container uses them any more, and counts those of other users
// it leaves (but not those of a container counted already). Volumes go with their container (RemoveVolumes); this finds
// those of a container removed without them.
func gcVolumes(ctx context.Context, eng Engine, o sandbox.GCOptions, counted map[string]bool, now time.Time) ([]sandbox.Removed, int, error) {
	list, err := eng.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return nil, 0, fmt.Errorf("%w: listing volumes: %w", sandbox.ErrUnavailable, err)
	}
	var removed []sandbox.Removed
	var others int
	var errs []error
	for _, v := range list.Volumes {
		created, _ := time.Parse(time.RFC3339, v.CreatedAt)
		reason := sandbox.GCReason(v.Labels, true, created, now)
		if reason == "" {
			continue
		}
		if !o.Covers(v.Labels) {
			if !counted[v.Labels[LabelSession]] {
				others++
			}
			continue
		}
		// In use (a container still mounts it) or already gone: leave it.
		if err := eng.VolumeRemove(ctx, v.Name, false); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, sandbox.Removed{ID: "volume " + v.Name, Reason: reason})
	}
	return removed, others, errors.Join(errs...)
}

// gcReason says why c may be removed, or "" when it must be left alone
// (the rules of sandbox.GCReason).
func gcReason(c container.Summary, now time.Time) string {
	return sandbox.GCReason(c.Labels, c.State == "exited" || c.State == "dead", time.Unix(c.Created, 0), now)
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// ListSandboxes returns the ids of agentbox containers on the engine, all of
// them or those of one session.
func ListSandboxes(ctx context.Context, eng Engine, session string) ([]string, error) {
	eng = withDeadlines(eng)
	label := LabelSession
	if session != "" {
		label += "=" + session
	}
	list, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, fmt.Errorf("%w: listing containers: %w", sandbox.ErrUnavailable, err)
	}
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// removeSession removes every container labelled with session id; what
// the engine could not remove (it stopped answering) is remembered for
// Sweep.
func (d *Runtime) removeSession(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ids, err := ListSandboxes(ctx, d.eng, id)
	for _, cid := range ids {
		if rerr := d.eng.ContainerRemove(ctx, cid, container.RemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && !isNotFound(rerr) {
			err = rerr
		}
	}
	d.noteRemoved(id, err == nil)
}

// noteRemoved remembers whether session id's containers are gone.
func (d *Runtime) noteRemoved(id string, gone bool) {
	d.umu.Lock()
	defer d.umu.Unlock()
	if gone {
		delete(d.unremoved, id)
		return
	}
	if d.unremoved == nil {
		d.unremoved = map[string]bool{}
	}
	d.unremoved[id] = true
}

// Sweep removes the containers of this runtime's sessions that the
// engine could not remove when they closed (it had stopped answering):
// once it answers again nothing outlives its session. A batch calls it
// before it returns; CloseAll does too. What still fails stays for the
// next Sweep or agentbox gc.
func (d *Runtime) Sweep(ctx context.Context) {
	d.umu.Lock()
	ids := make([]string, 0, len(d.unremoved))
	for id := range d.unremoved {
		ids = append(ids, id)
	}
	d.umu.Unlock()
	for _, id := range ids {
		d.removeSession(ctx, id)
	}
}
