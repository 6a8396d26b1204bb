package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Engine is the part of the Docker SDK client the sandbox uses.
type Engine interface {
	Ping(ctx context.Context) (types.Ping, error)
	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ContainerCreate(ctx context.Context, cfg *container.Config, hc *container.HostConfig, nc *network.NetworkingConfig, p *ocispec.Platform, name string) (container.CreateResponse, error)
	ContainerAttach(ctx context.Context, id string, opts container.AttachOptions) (types.HijackedResponse, error)
	ContainerStart(ctx context.Context, id string, opts container.StartOptions) error
	ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error)
	ContainerRemove(ctx context.Context, id string, opts container.RemoveOptions) error
	ContainerList(ctx context.Context, opts container.ListOptions) ([]container.Summary, error)
	VolumeList(ctx context.Context, opts volume.ListOptions) (volume.ListResponse, error)
	VolumeRemove(ctx context.Context, id string, force bool) error
	CopyFromContainer(ctx context.Context, id, srcPath string) (io.ReadCloser, container.PathStat, error)
}

var _ Engine = (*client.Client)(nil)

// NewClient connects to the engine named by the environment (DOCKER_HOST,
// DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) with API version negotiation and
// checks that it answers.
func NewClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: %w; check DOCKER_HOST", sandbox.ErrUnavailable, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: cannot reach the Docker engine at %s: %w; start it (systemctl start docker, or dockerd &) or point DOCKER_HOST at one",
			sandbox.ErrUnavailable, engineHost(cli), err)
	}
	cli.NegotiateAPIVersion(ctx)
	return cli, nil
}

func engineHost(cli *client.Client) string {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	return cli.DaemonHost()
}
