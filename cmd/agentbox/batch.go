package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/batch"
	"github.com/agentbox/agentbox/internal/hostcap"
	"github.com/agentbox/agentbox/internal/sizes"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
	"github.com/urfave/cli/v2"
)

func batchCommand() *cli.Command {
	return &cli.Command{
		Name:      "batch",
		Usage:     "run many tasks, each in its own sandbox on its own copy of its workspace",
		ArgsUsage: "TASKS.yaml|TASKS.jsonl",
		Flags: append(backendFlags("pool"),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "results", Usage: "results directory: results.jsonl, summary.json and one directory per task"},
			&cli.IntFlag{Name: "concurrency", Aliases: []string{"j"}, Usage: "tasks run at once (default: the number of cores)"},
			&cli.BoolFlag{Name: "resume", Usage: "continue a batch: skip the tasks that have a line in results.jsonl"},
			&cli.BoolFlag{Name: "retry-failed", Usage: "with --resume, also rerun the tasks that failed (not infra_failed ones: see --retry-infra)"},
			&cli.BoolFlag{Name: "retry-infra", Usage: "with --resume, also rerun the tasks that could not get a working sandbox (infra_failed)"},
			&cli.BoolFlag{Name: "rerun-interrupted", Usage: "with --resume, also rerun the tasks whose session started but never ended (they may have had effects)"},
			&cli.BoolFlag{Name: "no-pool", Usage: "do not prepare sandboxes ahead (each task starts its own)"},
			&cli.IntFlag{Name: "pool", Usage: "tasks prepared ahead (default: --concurrency); with --backend kubernetes, also the idle hardened pods kept per sandbox shape"},
			policyFlag(),
			&cli.StringFlag{Name: "audit", Usage: "audit log shared by all tasks (default: $XDG_STATE_HOME/agentbox/audit.jsonl)", EnvVars: []string{"AGENTBOX_AUDIT"}},
			&cli.StringFlag{Name: "audit-key-file", Usage: "HMAC key file for the audit log (else $AGENTBOX_AUDIT_KEY)"},
			otlpFlags()[0], otlpFlags()[1],
			&cli.StringFlag{Name: "image", Usage: "sandbox image for every task (default: each policy's sandbox.image)"},
			&cli.StringFlag{Name: "network", Usage: "none | proxy | open for every task (default: each policy's sandbox.network)"},
			&cli.StringFlag{Name: "executor", Hidden: true, EnvVars: []string{"AGENTBOX_EXECUTOR"}},
			&cli.StringFlag{Name: "model", Usage: "model for tasks without model: or script: (default: $OPENAI_MODEL, else " + agent.DefaultModel + ")"},
			&cli.StringFlag{Name: "base-url", Usage: "OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else OpenAI)"},
			noStreamFlag(),
			&cli.IntFlag{Name: "max-steps", Value: agent.DefaultMaxSteps, Usage: "model calls per task without max_steps:"},
			&cli.DurationFlag{Name: "timeout", Usage: "session timeout per task without timeout: (default: the policy's sandbox.timeouts.session)"},
			&cli.StringFlag{Name: "approve", Value: "deny", Usage: "answer to the policy's ask: deny or allow (nobody is asked in a batch)"},
			&cli.StringFlag{Name: "max-copy", Value: "1GiB", Usage: "largest workspace copied per task"},
			&cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus text metrics at http://ADDR/metrics while the batch runs (e.g. 127.0.0.1:9464; port 0 picks one, printed)"},
			&cli.DurationFlag{Name: "heartbeat", Value: batch.DefaultHeartbeat, Usage: "without a terminal, name the tasks still running this often (0 = never)"},
			&cli.BoolFlag{Name: "json", Usage: "print the final summary as JSON on stdout"},
			&cli.BoolFlag{Name: "json-events", Usage: "stream one JSON event per line on stdout (task_started, task_finished, end with the summary)"},
		),
		Action: batchAction,
	}
}

func batchAction(c *cli.Context) error {
	args, err := interspersed(c)
	if err != nil {
		return usageError{fmt.Errorf("%w (see agentbox batch --help)", err)}
	}
	if len(args) != 1 {
		return usageError{errors.New("batch needs one task file: agentbox batch tasks.yaml --output results/")}
	}
	if c.Int("concurrency") < 0 || c.Int("pool") < 0 || c.Int("max-steps") <= 0 {
		return usageError{errors.New("--concurrency and --pool must not be negative, --max-steps at least 1")}
	}
	if err := checkOutputFlags(c); err != nil {
		return err
	}
	if c.Duration("heartbeat") < 0 {
		return usageError{errors.New("--heartbeat must not be negative")}
	}
	if (c.Bool("retry-failed") || c.Bool("retry-infra") || c.Bool("rerun-interrupted")) && !c.Bool("resume") {
		return usageError{errors.New("--retry-failed, --retry-infra and --rerun-interrupted go with --resume")}
	}
	if v := c.String("network"); v != "" {
		if _, err := sandbox.ParseNetworkMode(v); err != nil {
			return usageError{fmt.Errorf("--network: %w", err)}
		}
	}
	maxCopy, err := sizes.Parse(c.String("max-copy"))
	if err != nil || maxCopy <= 0 {
		return usageError{fmt.Errorf("--max-copy %q: want a size such as 512MiB or 2GiB", c.String("max-copy"))}
	}
	var appr agent.Approver
	switch c.String("approve") {
	case "deny":
		appr = agent.DenyAll{DecidedBy: audit.DecidedByFlag}
	case "allow":
		appr = agent.AllowAll{}
	default:
		return usageError{fmt.Errorf("--approve %q: want deny or allow (a batch asks nobody)", c.String("approve"))}
	}
	tasks, err := batch.LoadTasks(args[0], batch.LoadOptions{MaxWorkspaceBytes: maxCopy})
	if err != nil {
		var ve *batch.ValidationError
		if errors.As(err, &ve) {
			for _, p := range ve.Problems {
				fmt.Fprintln(c.App.ErrWriter, p)
			}
			return exitWith(exitUsage, fmt.Errorf("%d problem(s) in the task file; nothing was started", len(ve.Problems)))
		}
		return exitWith(exitUsage, err)
	}
	def, err := loadPolicy(c)
	if err != nil {
		return err
	}
	if err := checkResumeTaskFile(c.String("output"), args[0], c.Bool("resume")); err != nil {
		return err
	}
	log, err := openBatchAudit(c, def, tasks)
	if err != nil {
		return err
	}
	defer log.Close()
	mc := agent.ConfigFromEnv(os.Getenv)
	if v := c.String("model"); v != "" {
		mc.Model = v
	}
	if v := c.String("base-url"); v != "" {
		mc.BaseURL = v
	}
	if c.Bool("no-stream") {
		mc.NoStream = true
	}
	cfg := batch.Config{
		Tasks: tasks, Output: c.String("output"), Concurrency: c.Int("concurrency"),
		NoPool: c.Bool("no-pool"), PoolSize: c.Int("pool"), Resume: c.Bool("resume"), RetryFailed: c.Bool("retry-failed"), RetryInfra: c.Bool("retry-infra"),
		RerunInterrupted: c.Bool("rerun-interrupted"), AuditPath: log.Path(),
		CrashAt: os.Getenv("AGENTBOX_TEST_BATCH_CRASH_AT"), MetricsAddr: c.String("metrics-addr"), Heartbeat: heartbeatOf(c),
		Sandbox: batch.Overrides{Image: c.String("image"), Network: sandbox.NetworkMode(c.String("network")), ExecutorPath: c.String("executor")},
		Policy:  def, Audit: log, Approver: appr, Model: mc, MaxSteps: c.Int("max-steps"), Timeout: c.Duration("timeout"),
		Version: agentbox.Version, MaxCopyBytes: maxCopy, NoOverlay: os.Getenv("AGENTBOX_OVERLAY") == "off", Progress: c.App.ErrWriter,
		TTY: isTerminal(os.Stderr) && os.Getenv("TERM") != "dumb", Width: func() int { return termWidth(os.Stderr) },
	}
	var events *batch.JSONEvents
	if c.Bool("json-events") {
		events = &batch.JSONEvents{W: c.App.Writer}
		cfg.Events, cfg.Quiet = events, true
	}
	if v := os.Getenv("AGENTBOX_TEST_BATCH_INFRA_PAUSE"); v != "" {
		// Tests: the infrastructure breaker's pause bound (default 5m).
		cfg.InfraPause, _ = time.ParseDuration(v)
	}
	if root, err := batch.DefaultWorkRoot(os.Getenv); err == nil {
		cfg.WorkRoot = root
	}
	if st, err := workspace.DefaultStore(os.Getenv); err == nil {
		cfg.HeldStore = st.Dir
	}
	if cfg.MaxSandboxes, _, err = hostcap.Limit(os.Getenv, hostcap.HostFile); err != nil {
		return usageError{err}
	}
	if cfg.SlotDir, err = hostcap.Dir(os.Getenv); err != nil {
		return exitWith(exitUsage, err)
	}
	if !buildsImages(c) {
		for _, t := range tasks {
			if t.Devcontainer != nil && t.Devcontainer.Build != nil {
				return exitWith(exitUsage, fmt.Errorf("task %s: %w", t.ID, remoteBuildRefusal(capabilities(c).Backend)))
			}
		}
	}
	if err := buildBatchDevcontainers(c, tasks, c.App.ErrWriter); err != nil {
		return exitWith(exitCode(err), fmt.Errorf("%w; no task was started", err))
	}
	return withRuntime(c, func(rt backend) error {
		_, _ = rt.GC(c.Context, sandbox.GCOptions{})
		if err := checkBatchImages(c.Context, rt, def, cfg.Sandbox, tasks); err != nil {
			return exitWith(errorExitCode(err), fmt.Errorf("%w; no task was started", err))
		}
		cfg.Runtime = rt
		sum, err := batch.Run(c.Context, cfg)
		if errors.Is(err, batch.ErrConfig) {
			return exitWith(exitUsage, err)
		}
		switch {
		case events != nil:
			events.End(sum)
		case c.Bool("json"):
			enc := json.NewEncoder(c.App.Writer)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(sum)
		default:
			sum.WriteTable(c.App.Writer)
		}
		if errors.Is(err, batch.ErrEndpointFailing) {
			return exitWith(exitFailed, fmt.Errorf("%w; once the endpoint works again, run the same command with --resume to run them", err))
		}
		if errors.Is(err, batch.ErrInfraStopped) {
			return exitWith(exitUnavailable, fmt.Errorf("%w; once the engine works again, run the same command with --resume to run them", err))
		}
		if err != nil {
			return exitWith(exitInterrupted, err)
		}
		if !sum.AllOK() && sum.OnlyInfra() {
			return exitWith(exitUnavailable, fmt.Errorf("%d of %d tasks could not get a working sandbox (infra_failed); fix the engine, then --resume --retry-infra; see %s", sum.Total-sum.OK, sum.Total, sum.Results))
		}
		if !sum.AllOK() {
			return exitWith(exitFailed, fmt.Errorf("%d of %d tasks did not succeed; see %s", sum.Total-sum.OK, sum.Total, sum.Results))
		}
		return nil
	})
}

// openBatchAudit opens the audit log shared by all tasks: never inside a
// task's workspace, redacting with every policy's patterns.
func openBatchAudit(c *cli.Context, def *policy.Policy, tasks []batch.Task) (*audit.Writer, error) {
	policies := []*policy.Policy{def}
	seen := map[*policy.Policy]bool{def: true}
	dirs := make([]mountedDir, 0, len(tasks))
	for _, t := range tasks {
		dirs = append(dirs, mountedDir{label: "task " + t.ID, dir: t.Workspace})
		if t.Policy != nil && !seen[t.Policy] {
			seen[t.Policy] = true
			policies = append(policies, t.Policy)
		}
	}
	return openAuditLog(c, policies, dirs)
}

// heartbeatOf is --heartbeat for batch.Config (0 on the command line: never).
func heartbeatOf(c *cli.Context) time.Duration {
	if d := c.Duration("heartbeat"); d > 0 {
		return d
	}
	return -1
}
