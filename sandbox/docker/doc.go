// Package docker is the sandbox.Runtime on a Docker Engine API (a local
// dockerd, one reached through DOCKER_HOST, or Podman's Docker-compatible
// API, whose differences are detected once and isolated in podman.go).
//
// Each session is one hardened container (spec.go: no network or the
// proxy only, every capability dropped, no-new-privileges, agentbox's
// seccomp additions, a read-only root, limits from the policy) whose main
// process is this agentbox binary, statically linked and bind-mounted
// read-only, started as `agentbox executor`. The executor protocol
// (package sandbox/wire) runs over the container's attached stdio. The
// workspace is bind-mounted (rw or ro) or, for a copy-mode session, an
// overlay the engine mounts (overlay.go); the policy's file rules are
// enforced by kernel mounts at start (masks.go, maskmounts.go); network:
// proxy reaches the host-side proxy over a mounted unix socket or the
// executor's channel (netproxy.go). Containers carry owner labels so gc
// removes those whose owner is provably gone (gc.go). What the backend can
// do is declared in Caps; the engine SDK never leaves this package.
package docker
