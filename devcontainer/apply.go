package devcontainer

import (
	"fmt"

	"github.com/agentbox/agentbox/sandbox"
)

// Apply puts the devcontainer into a session's configuration: image (the
// one Image returned), containerEnv and the user; it returns the lifecycle
// commands, each to run as an ordinary tool call before the task. policyUser
// is the policy's sandbox.user. Nothing here loosens the sandbox: the
// hardening, the network and the file rules stay the policy's; a variable
// agentbox sets itself, or one the policy passes too, and a user other than
// the policy's are refused by name.
func Apply(c *Config, image, policyUser string, cfg *sandbox.Config) ([]string, error) {
	if image == "" {
		return nil, fmt.Errorf("%s: no image: build the devcontainer first (devcontainer.Image)", c.Path)
	}
	reserved := map[string]bool{}
	for k := range sandbox.ProxyEnv() {
		reserved[k] = true
	}
	for k := range sandbox.TrustEnv() {
		reserved[k] = true
	}
	for k := range c.Env {
		if reserved[k] {
			return nil, fmt.Errorf("%s: %w: containerEnv.%s: agentbox sets it", c.Path, ErrRefused, k)
		}
		if _, set := cfg.Env[k]; set {
			return nil, fmt.Errorf("%s: %w: containerEnv.%s: the policy's sandbox.env passes it too; keep one", c.Path, ErrRefused, k)
		}
	}
	if c.User != "" && policyUser != "" && policyUser != c.User {
		return nil, fmt.Errorf("%s: %w: remoteUser/containerUser %s: the policy sets sandbox.user %s", c.Path, ErrRefused, c.User, policyUser)
	}
	if len(c.Env) > 0 {
		env := make(map[string]string, len(cfg.Env)+len(c.Env))
		for k, v := range cfg.Env {
			env[k] = v
		}
		for k, v := range c.Env {
			env[k] = v
		}
		cfg.Env = env
	}
	if c.User != "" {
		cfg.User = c.User
	}
	cfg.Image = image
	cmds := make([]string, 0, len(c.Commands))
	for _, cmd := range c.Commands {
		cmds = append(cmds, cmd.Script)
	}
	return cmds, nil
}
