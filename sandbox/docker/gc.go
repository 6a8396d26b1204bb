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
)

// GC removes agentbox containers on this engine whose owning process (on
// this host) is gone. It never touches containers of live processes or of
// other hosts. It returns the ids removed.
func GC(ctx context.Context, eng Engine) ([]string, error) {
	list, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return nil, fmt.Errorf("%w: listing containers: %w", sandbox.ErrUnavailable, err)
	}
	me := hostname()
	var removed []string
	var errs []error
	for _, c := range list {
		if c.Labels[LabelHost] != me || ownerAlive(c.Labels[LabelOwner]) {
			continue
		}
		// Not found or conflict: another gc is removing it already.
		if err := eng.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, c.ID)
	}
	return removed, errors.Join(errs...)
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// ListSandboxes returns the ids of agentbox containers on the engine, all of
// them or those of one session.
func ListSandboxes(ctx context.Context, eng Engine, session string) ([]string, error) {
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

// removeSession removes every container labelled with session id.
func (d *Runtime) removeSession(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ids, err := ListSandboxes(ctx, d.eng, id)
	if err != nil {
		return
	}
	for _, cid := range ids {
		_ = d.eng.ContainerRemove(ctx, cid, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
}
