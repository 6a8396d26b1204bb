package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// ErrConfig marks a batch that cannot start (output directory, results
// file, model settings): nothing was run. The CLI exits 2.
var ErrConfig = errors.New("batch configuration")

// AuditLog is the one audit log all tasks share; *audit.Writer implements
// it (its Append is safe for concurrent use).
type AuditLog interface {
	agent.AuditLog
	Redact(string) string
}

// Overrides are command-line settings that win over each task's policy.
type Overrides struct {
	Image        string
	Network      sandbox.NetworkMode
	ExecutorPath string // static agentbox binary mounted as the executor
}

// Config is one batch.
type Config struct {
	Tasks  []Task
	Output string // results directory, created if needed
	// Concurrency is the number of tasks run at once (default: cores).
	Concurrency int
	// NoPool disables the warm pool; PoolSize is the number of tasks
	// prepared ahead (default: Concurrency).
	NoPool   bool
	PoolSize int
	// Resume skips tasks that have a line in results.jsonl or whose
	// session the journal (or the audit log) says ended; with RetryFailed,
	// only those whose status is ok. A task that started but did not end is
	// interrupted and runs again only with RerunInterrupted.
	// RetryInfra reruns the tasks that ended infra_failed (RetryFailed
	// does not).
	Resume, RetryFailed, RerunInterrupted, RetryInfra bool
	// InfraRetries, InfraFailures and InfraPause bound the infrastructure
	// breaker (0 = DefaultInfraRetries, DefaultInfraFailures,
	// DefaultInfraPause; see infra.go).
	InfraRetries, InfraFailures int
	InfraPause                  time.Duration
	// AuditPath is the audit log's file, read on resume to rebuild the
	// result of a task whose session ended before the batch recorded it.
	AuditPath string

	Runtime  sandbox.Runtime
	Sandbox  Overrides
	Policy   *policy.Policy // for tasks without their own
	Audit    AuditLog
	Approver agent.Approver // nil = deny every ask (nobody is at a terminal)
	// Model is the OpenAI-compatible endpoint for tasks without a script;
	// a task's model: overrides Model.Model.
	Model    agent.Config
	MaxSteps int           // for tasks without max_steps (default agent.DefaultMaxSteps)
	Timeout  time.Duration // for tasks without timeout (default: the policy's)
	Version  string
	// MaxCopyBytes caps each workspace copy (default DefaultMaxCopyBytes).
	MaxCopyBytes int64
	// NoOverlay makes real copies instead of overlays (AGENTBOX_OVERLAY=off).
	NoOverlay bool
	// DiskInSandbox, when set, says where a task's writes are bounded
	// instead of a disk image under the copy ("" = as the runtime's
	// capabilities say); see workspace.CopyOptions.BoundInSandbox.
	DiskInSandbox string
	// Progress receives the progress line (TTY) or one line per task;
	// Width is the terminal's width, asked at every redraw (nil = 80).
	// Quiet leaves only notices (the events carry the progress).
	Progress io.Writer
	TTY      bool
	Width    func() int
	Quiet    bool
	// Events hears about every task as it starts and finishes (nil = none).
	Events Events
	// CrashAt ("POINT:TASK") kills this process with SIGKILL when task
	// TASK reaches POINT (started, session-ended, journalled): a test hook
	// for the resume guarantees (AGENTBOX_TEST_BATCH_CRASH_AT).
	CrashAt string
	// MaxSandboxes caps the sandboxes running at once on this host across
	// every agentbox process (hostcap; the CLI: hostcap.Limit), sharing
	// SlotDir (hostcap.Dir); 0 = not capped.
	MaxSandboxes int
	SlotDir      string
	// Heartbeat is how often piped output names the tasks still running
	// (0 = DefaultHeartbeat, <0 = never).
	Heartbeat time.Duration
	// MetricsAddr, when set, serves Prometheus text metrics at
	// http://MetricsAddr/metrics while the batch runs.
	MetricsAddr string
	// WorkRoot is the parent of every batch's work directory, where the
	// workspace copies live (the CLI: DefaultWorkRoot); "" = OUTPUT/.work.
	// Each batch works in WorkRoot/<batch id>, owned by this process: gc
	// removes it only once this process is proven gone.
	WorkRoot string
	// HeldStore is where a task's held changes are kept for review, as an
	// ended staged session (agentbox changes SESSION --held; the CLI:
	// workspace.DefaultStore); "" = not kept.
	HeldStore string
	// EndpointFailures is how many tasks in a row may end with the model
	// endpoint failing before no more tasks start (0 =
	// DefaultEndpointFailures; see breaker.go).
	EndpointFailures int
}

// Summary is the outcome of a batch.
type Summary struct {
	Batch       string         `json:"batch"` // this run's batch id (in every audit record)
	Total       int            `json:"total"`
	Skipped     int            `json:"skipped"` // finished by an earlier run (--resume)
	Ran         int            `json:"ran"`     // finished in this run
	OK          int            `json:"ok"`      // of all finished tasks
	Failed      int            `json:"failed"`  // finished with another status
	NotRun      int            `json:"not_run"` // interrupted or never started
	ByStatus    map[string]int `json:"by_status"`
	DeniedCalls int            `json:"denied_calls"`
	Review      int            `json:"review"` // finished tasks with held changes or alarms (shown marked: ok!)
	Usage       Usage          `json:"usage"`  // the finished tasks' usage, summed
	Tokens      int            `json:"tokens"`
	DurationMS  int64          `json:"duration_ms"`
	TasksPerMin float64        `json:"tasks_per_min"` // tasks finished in this run
	Interrupted bool           `json:"interrupted"`
	// Stopped says why no more tasks were started (the model endpoint
	// kept failing); those tasks are in Tasks as StatusNotStarted.
	Stopped string `json:"stopped,omitempty"`
	Results string `json:"results"` // path of results.jsonl
	// SandboxStarts counts the finished tasks by Line.SandboxStart (warm,
	// cold); empty when no task asked a warm pool.
	SandboxStarts map[string]int `json:"sandbox_starts,omitempty"`
	// Tasks are every finished task, and the tasks not started when the
	// batch stopped, in task-file order.
	Tasks []Line `json:"tasks"`
}

// AllOK reports whether every task of the batch finished with status ok.
func (s Summary) AllOK() bool { return s.OK == s.Total }

type batcher struct {
	id      string // the batch id of this run
	cfg     Config
	work    string // parent of the workspace copies
	results *resultsFile
	journal *journal
	mu      sync.Mutex
	started map[string]bool // tasks journalled as started in this run
	slots   *slots
	infra   *infraBreaker
	acct    *accountingLog // cfg.Audit, stamping the batch id and counting
	prog    *progress
	brk     *breaker
}

// sweeper is a runtime that can remove, later, the sandboxes the engine
// could not remove when they closed (the docker backend).
type sweeper interface{ Sweep(ctx context.Context) }

// Run runs the batch. It returns when every task has finished or ctx
// ended; in both cases every container it started has been removed and
// every workspace copy deleted. Task failures are in the Summary, not the
// error; the error is set when the batch could not start (wrapping
// ErrConfig), or with ctx's cause when it was interrupted.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if cfg.Runtime == nil || cfg.Audit == nil || cfg.Policy == nil {
		return Summary{}, errors.New("batch.Run: Runtime, Audit and Policy are required")
	}
	if cfg.Output == "" {
		return Summary{}, fmt.Errorf("%w: no output directory; pass --output DIR", ErrConfig)
	}
	if err := checkModels(cfg); err != nil {
		return Summary{}, err
	}
	out, err := filepath.Abs(cfg.Output)
	if err != nil {
		return Summary{}, fmt.Errorf("%w: output %s: %w", ErrConfig, cfg.Output, err)
	}
	cfg.Output = out
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Summary{}, fmt.Errorf("%w: creating the output directory: %w", ErrConfig, err)
	}
	unlock, err := lockDir(filepath.Join(out, lockFileName))
	if err != nil {
		return Summary{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer unlock()
	res, done, err := openResults(filepath.Join(out, resultsName), cfg.Resume)
	if err != nil {
		return Summary{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer res.close()
	if sw, ok := cfg.Runtime.(sweeper); ok {
		// Sandboxes whose removal failed while the engine was away are
		// removed once it answers again, before the batch returns.
		defer sw.Sweep(context.WithoutCancel(ctx))
	}
	jr, states, err := openJournal(filepath.Join(out, journalName), cfg.Resume)
	if err != nil {
		return Summary{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer jr.close()
	b := &batcher{id: sandbox.NewID(), cfg: cfg, results: res, journal: jr, started: map[string]bool{},
		brk: newBreaker(cfg.EndpointFailures, cfg.Audit.Redact)}
	interrupted := b.recover(states, done)
	b.infra = newInfraBreaker(cfg, func(msg string) { b.prog.notice(msg) })
	b.acct = newAccountingLog(cfg.Audit, b.id)
	b.cfg.Audit = b.acct
	if err := b.openSlots(); err != nil {
		return Summary{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := b.openWork(); err != nil {
		return Summary{}, fmt.Errorf("%w: work directory: %w", ErrConfig, err)
	}
	defer b.closeWork()

	var pending []*Task
	finished := map[string]Line{}
	for i := range cfg.Tasks {
		t := &cfg.Tasks[i]
		if l, ok := done[t.ID]; ok && !retry(cfg, l.Status) {
			finished[t.ID] = l
			continue
		}
		if _, ok := interrupted[t.ID]; ok && !cfg.RerunInterrupted {
			continue
		}
		pending = append(pending, t)
	}
	skipped := len(finished)
	b.prog = newProgress(cfg.Progress, cfg.TTY, len(cfg.Tasks), len(pending))
	b.prog.width, b.prog.quiet = cfg.Width, cfg.Quiet
	for _, l := range finished {
		b.prog.count(l)
	}
	start := time.Now()
	if cfg.Resume {
		if msg := resumeNote(cfg, finished, interrupted, len(pending)); msg != "" {
			b.prog.notice(msg)
		}
	}
	b.prog.draw()
	if cfg.MetricsAddr != "" {
		stop, err := b.serveMetrics(cfg.MetricsAddr)
		if err != nil {
			return Summary{}, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		defer stop()
	}
	hb := cfg.Heartbeat
	if hb == 0 {
		hb = DefaultHeartbeat
	}
	hbCtx, hbStop := context.WithCancel(ctx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); b.heartbeat(hbCtx, hb) }()
	var mu sync.Mutex
	ran := 0
	b.schedule(ctx, pending, func(l Line) {
		mu.Lock()
		finished[l.ID] = l
		ran++
		mu.Unlock()
		b.prog.finished(l)
		if cfg.Events != nil {
			cfg.Events.TaskFinished(l)
		}
	})
	hbStop()
	<-hbDone
	b.prog.end()
	elapsed := time.Since(start)

	s := Summary{Batch: b.id, Total: len(cfg.Tasks), Skipped: skipped, Ran: ran, ByStatus: map[string]int{},
		DurationMS: elapsed.Milliseconds(), Interrupted: ctx.Err() != nil, Results: res.f.Name(), Tasks: []Line{}}
	if elapsed > 0 {
		s.TasksPerMin = float64(ran) / elapsed.Minutes()
	}
	stopped, stopErr := b.brk.tripped(), ErrEndpointFailing
	if stopped != "" {
		stopped = "model endpoint failing: " + stopped
	} else if stopped = b.infra.tripped(); stopped != "" {
		stopErr = ErrInfraStopped
	}
	for _, t := range cfg.Tasks {
		l, ok := finished[t.ID]
		if !ok && (b.started[t.ID] || (interrupted[t.ID] && !cfg.RerunInterrupted)) {
			s.NotRun++
			s.Tasks = append(s.Tasks, Line{ID: t.ID, Status: StatusInterrupted, Exit: exitInterrupted,
				Error: "its session started but did not end; pass --rerun-interrupted with --resume to run it again", FilesChanged: []audit.FileChange{}})
			s.ByStatus[StatusInterrupted]++
			continue
		}
		if !ok {
			s.NotRun++
			if stopped != "" && ctx.Err() == nil {
				s.Stopped = stopped
				s.Tasks = append(s.Tasks, Line{ID: t.ID, Status: StatusNotStarted, Exit: exitFailed,
					Error: stopped, FilesChanged: []audit.FileChange{}})
				s.ByStatus[StatusNotStarted]++
			}
			continue
		}
		s.Tasks = append(s.Tasks, l)
		s.ByStatus[l.Status]++
		if l.SandboxStart != "" {
			if s.SandboxStarts == nil {
				s.SandboxStarts = map[string]int{}
			}
			s.SandboxStarts[l.SandboxStart]++
		}
		s.DeniedCalls += l.DeniedCalls
		if l.Review != "" {
			s.Review++
		}
		s.Usage.add(l.Usage)
		s.Tokens += l.Tokens
		if l.Status == agent.StatusOK {
			s.OK++
		} else {
			s.Failed++
		}
	}
	_ = writeJSON(filepath.Join(out, summaryName), s)
	if ctx.Err() != nil {
		return s, fmt.Errorf("batch interrupted with %d of %d tasks not finished: %w", s.NotRun, s.Total, context.Cause(ctx))
	}
	if s.Stopped != "" {
		return s, fmt.Errorf("%w (%s): %d of %d tasks not started", stopErr, s.Stopped, s.NotRun, s.Total)
	}
	return s, nil
}

// checkModels makes sure every task without a script has a model endpoint
// before anything starts.
func checkModels(cfg Config) error {
	for _, t := range cfg.Tasks {
		if t.Script != nil {
			continue
		}
		if _, _, err := newModel(cfg.Model, &t); err != nil {
			return fmt.Errorf("%w: task %s (line %d): %w", ErrConfig, t.ID, t.Line, err)
		}
	}
	return nil
}

// newModel is the task's scripted model, or the endpoint's.
func newModel(base agent.Config, t *Task) (agent.Model, string, error) {
	mc := base
	if t.Model != "" {
		mc.Model = t.Model
	}
	return agent.NewModel(agent.ModelSpec{Script: t.Script, ScriptPath: t.ScriptPath, Config: mc})
}

func (b *batcher) concurrency() int {
	if b.cfg.Concurrency > 0 {
		return b.cfg.Concurrency
	}
	return runtime.NumCPU()
}

func (b *batcher) poolSize() int {
	if b.cfg.PoolSize > 0 {
		return b.cfg.PoolSize
	}
	return b.concurrency()
}

// SandboxConfig is the session configuration of a task: its policy's
// sandbox settings, the command-line overrides, and the workspace copy.
func SandboxConfig(p *policy.Policy, o Overrides, workspace string) sandbox.Config {
	cfg := agent.SandboxConfig(p, workspace)
	cfg.ExecutorPath = o.ExecutorPath
	if o.Image != "" {
		cfg.Image = o.Image
	}
	if o.Network != "" {
		cfg.Network = o.Network
	}
	return cfg
}

// retry reports whether a task that finished with status in an earlier
// run runs again: --retry-failed for task failures, --retry-infra for
// infra_failed.
func retry(cfg Config, status string) bool {
	switch status {
	case agent.StatusOK:
		return false
	case StatusInfraFailed:
		return cfg.RetryInfra
	}
	return cfg.RetryFailed
}
