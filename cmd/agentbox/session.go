package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/urfave/cli/v2"
)

// secretEnv names host variables whose values never reach the audit log,
// the terminal or the model.
var secretEnv = []string{"OPENAI_API_KEY", "AGENTBOX_AUDIT_KEY"}

// secretName marks a variable the policy passes into the sandbox as a
// secret by its name: its value is redacted from every record and output.
var secretName = regexp.MustCompile(`(?i)(key|token|secret|passw|credential|auth)`)

// knownSecrets are the values to redact: agentbox's own secrets and those
// of the variables the policies pass in under a secret-looking name.
func knownSecrets(policies ...*policy.Policy) []string {
	var out []string
	for _, n := range secretEnv {
		if v := os.Getenv(n); v != "" {
			out = append(out, v)
		}
	}
	for _, p := range policies {
		for _, s := range p.Secrets() { // brokered: never in a record, the terminal or the model's context
			if v := s.Peek(); len(v) >= policy.MinSecretLen {
				out = append(out, v)
			}
		}
		for _, n := range p.Sandbox.Env {
			if v := os.Getenv(n); v != "" && secretName.MatchString(n) {
				out = append(out, v)
			}
		}
	}
	return out
}

// openAudit opens the audit log for a session on workspace: --audit or the
// default path, never inside the workspace.
func openAudit(c *cli.Context, p *policy.Policy, workspace string) (*audit.Writer, error) {
	return openAuditLog(c, []*policy.Policy{p}, []mountedDir{{dir: workspace}})
}

// mountedDir is a directory a sandbox mounts; label names it in errors.
type mountedDir struct{ label, dir string }

// openAuditLog opens the audit log shared by sessions under policies (the
// first one's preview size; every one's redaction patterns and secret
// variables) on the given directories, none of which may hold the log.
func openAuditLog(c *cli.Context, policies []*policy.Policy, dirs []mountedDir) (*audit.Writer, error) {
	path := c.String("audit")
	if path == "" {
		def, err := audit.DefaultPath()
		if err != nil {
			return nil, exitWith(exitUsage, fmt.Errorf("no audit log path: %w; pass --audit FILE", err))
		}
		path = def
	}
	for _, d := range dirs {
		if err := audit.CheckOutside(path, d.dir); err != nil {
			if d.label != "" {
				err = fmt.Errorf("%s: %w", d.label, err)
			}
			return nil, exitWith(exitUsage, err)
		}
	}
	key, err := audit.KeyFromEnv(c.String("audit-key-file"))
	if err != nil {
		return nil, exitWith(exitUsage, err)
	}
	var redact []*regexp.Regexp
	for _, p := range policies {
		redact = append(redact, p.Audit.Redact...)
	}
	opts := audit.Options{Key: key, Redact: redact, Secrets: knownSecrets(policies...), PreviewBytes: int(policies[0].Audit.PreviewBytes)}
	if dir := policies[0].Audit.Checkpoints; dir != "" {
		if opts.CheckpointKey, err = audit.CheckpointKeyFromEnv(); err != nil {
			return nil, usageError{err}
		}
		opts.Checkpoints = dir
	}
	sink, err := otlpSink(c)
	if err != nil {
		return nil, err
	}
	opts.Sink = sink
	w, err := audit.Open(path, opts)
	if err != nil {
		if cl, ok := sink.(interface{ Close() error }); ok {
			cl.Close()
		}
		return nil, exitWith(exitUsage, fmt.Errorf("audit log %s: %w", path, err))
	}
	return w, nil
}

// learnFlag makes a session a learning run (session.Options.Learn).
func learnFlag() cli.Flag {
	return &cli.BoolFlag{Name: "learn", Usage: "a learning run: on a copy, what the policy would ask about or deny runs and is recorded as would_ask/would_deny (then: agentbox policy suggest LOG)"}
}

func approveFlag() cli.Flag {
	return &cli.StringFlag{Name: "approve", Usage: "who answers the policy's ask: prompt (a terminal), deny, allow (default: prompt on a terminal, else deny). " + approvalScopes}
}

// approver picks the approver for ask decisions.
func approver(c *cli.Context) (agent.Approver, error) {
	tty := isTerminal(os.Stdin) && isTerminal(os.Stderr)
	switch c.String("approve") {
	case "", "prompt":
		if !tty && c.String("approve") == "prompt" {
			return nil, usageError{errors.New("--approve prompt needs a terminal on stdin and stderr; use --approve deny or allow")}
		}
		return rememberingApprover(c, tty)
	case "deny":
		return agent.DenyAll{DecidedBy: audit.DecidedByFlag}, nil
	case "allow":
		return agent.AllowAll{}, nil
	}
	return nil, usageError{fmt.Errorf("--approve %q: want prompt, deny or allow", c.String("approve"))}
}

// approvalScopes names the answers of the approval prompt and how long
// each holds, for --help (run, exec, approvals).
const approvalScopes = "At the prompt each answer has a scope: y/n/r once (this call; r tells the model why), " +
	"s this session (the command prefix or policy rule shown, until the session ends), " +
	"a always in this workspace (the prefix is saved: agentbox approvals list/remove), " +
	"d deny for this session (every later call under the rule)"
