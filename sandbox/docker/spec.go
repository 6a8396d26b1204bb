package docker

import (
	"strconv"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-units"
)

// executorPath is where the executor binary is mounted in the container.
const executorPath = "/.agentbox/agentbox"

// containerSpec is every hardening default of docs/DESIGN.md in one place:
// seccomp is the profile (see seccompProfile), masks the file-rule mounts.
func containerSpec(cfg sandbox.Config, exe, id string, owner map[string]string, host, seccomp string, masks []mount.Mount) (*container.Config, *container.HostConfig) {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp"}
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	netMode := "none"
	if cfg.Network == sandbox.NetworkOpen {
		netMode = "bridge"
	}
	pids := hostPids(cfg)
	ccfg := &container.Config{
		Image:           cfg.Image,
		Cmd:             []string{executorPath, "executor"},
		Entrypoint:      []string{},
		User:            cfg.User,
		Env:             env,
		WorkingDir:      sandbox.WorkspaceDir,
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		OpenStdin:       true,
		StdinOnce:       true,
		NetworkDisabled: cfg.Network != sandbox.NetworkOpen,
		Labels:          map[string]string{LabelSession: id, LabelHost: host, LabelTimeout: strconv.FormatInt(int64(cfg.SessionTimeout.Seconds()), 10)},
	}
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(netMode),
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + seccomp},
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,size=64m,mode=1777"},
		// No engine init: the executor is PID 1, non-dumpable (no command
		// can ptrace it or read its memory), and reaps every orphan.
		Init:      new(bool),
		Runtime:   cfg.Runtime,
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     cfg.MemoryBytes,
			MemorySwap: cfg.MemoryBytes,
			NanoCPUs:   int64(cfg.CPUs * 1e9),
			// Half the default weight: under contention a runaway sandbox
			// yields to the host's own work (and sandboxes share equally).
			CPUShares: sandboxCPUShares,
			PidsLimit: &pids,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: 4096, Hard: 4096},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
		Mounts: []mount.Mount{
			{Type: mount.TypeBind, Source: cfg.Workspace, Target: sandbox.WorkspaceDir, ReadOnly: cfg.WorkspaceMode == sandbox.WorkspaceRO},
			{Type: mount.TypeBind, Source: exe, Target: executorPath, ReadOnly: true},
		},
	}
	hc.Mounts = append(hc.Mounts, masks...)
	for k, v := range owner {
		ccfg.Labels[k] = v
	}
	return ccfg, hc
}

// sandboxCPUShares is each sandbox's CPU weight (the engine's default is
// 1024).
const sandboxCPUShares = 512

// runscPidsHeadroom is what gVisor's own host threads and processes (the
// sentry, the gofer, the ptrace platform's stubs) need beside the
// sandbox's tasks.
const runscPidsHeadroom = 512

// hostPids is the engine's pids limit. Under gVisor it bounds the
// sandbox's host threads, the sentry's included: a fork bomb inside
// would starve the sentry of threads and kill the whole sandbox. There
// the executor bounds the command's tasks to cfg.Pids (every fork beyond
// is killed at birth) and the engine's limit leaves gVisor room.
func hostPids(cfg sandbox.Config) int64 {
	if cfg.Runtime == "runsc" && cfg.Pids > 0 {
		return 16*cfg.Pids + runscPidsHeadroom
	}
	return cfg.Pids
}
