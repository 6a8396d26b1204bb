// Command agentbox runs an LLM agent whose every action happens inside a
// disposable, hardened Docker container, gated by a YAML policy and recorded
// in a tamper-evident audit log. This package only parses flags, builds
// configuration, calls the packages and maps errors to exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/textutil"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox/executor"
	"github.com/agentbox/agentbox/session"
	"github.com/urfave/cli/v2"
)

// Exit codes (docs/DESIGN.md; session owns them).
const (
	exitOK          = session.ExitOK
	exitFailed      = session.ExitFailed
	exitUsage       = session.ExitUsage
	exitLimit       = session.ExitLimit
	exitTimeout     = session.ExitTimeout
	exitUnavailable = session.ExitUnavailable
	exitDenied      = session.ExitDenied
	exitInterrupted = session.ExitInterrupted
)

// exitError carries an exit code up to main. A nil err means "exit with code,
// print nothing" (the command already reported).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

func main() {
	if len(os.Args) > 1 && os.Args[1] == executor.ShimArg {
		executor.Shim(os.Args[2:]) // inside the sandbox, between fork and bash
	}
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel()})))
	// After the first signal agentbox cleans up; a second one kills it.
	ctx, stop := signalContext(context.Background())
	defer stop()
	app := newApp(stdin, stdout, stderr)
	var unknown string
	app.CommandNotFound = func(_ *cli.Context, name string) { unknown = name }
	args, err := hoistFlags(app, args)
	if err == nil {
		err = app.RunContext(ctx, args)
	}
	if unknown != "" && err == nil {
		err = usageError{fmt.Errorf("unknown command %q (see agentbox --help)", unknown)}
	}
	code := exitCode(err)
	if ctx.Err() != nil && code != exitOK {
		code = interruptedCode(ctx)
		if err == nil || errors.Is(err, context.Canceled) {
			err = errors.New("interrupted; every sandbox of this run was removed")
		}
	}
	if err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || ee.err != nil {
			// Errors can carry bytes from the sandbox: never raw escapes.
			// They keep their whole cause chain; only the display is cut.
			fmt.Fprintln(stderr, "agentbox: "+textutil.Clip(policy.Visible(err.Error()), maxErrorDisplay))
		}
	}
	return code
}

// maxErrorDisplay bounds an error message on the terminal.
const maxErrorDisplay = 2000

func logLevel() slog.Level {
	if os.Getenv("AGENTBOX_DEBUG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return errorExitCode(err)
}

type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:                 "agentbox",
		Usage:                "run an LLM agent whose every action happens in a disposable, hardened sandbox",
		Version:              agentbox.Version,
		Reader:               stdin,
		Writer:               stdout,
		ErrWriter:            stderr,
		HideVersion:          false,
		EnableBashCompletion: true,
		ExitErrHandler:       func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{fmt.Errorf("%w (see agentbox --help)", err)}
		},
		Commands: []*cli.Command{
			runCommand(),
			batchCommand(),
			execCommand(),
			policyCommand(),
			auditCommand(),
			memoryCommand(),
			doctorCommand(),
			gcCommand(),
			changesCommand(),
			rewindCommand(),
			forkCommand(),
			applyCommand(),
			discardCommand(),
			imageCommand(),
			approvalsCommand(),
			completionCommand(),
			manCommand(),
			versionCommand(),
			mcpCommand(),
			executorCommand(),
		},
	}
	setUsageErrors(app.Commands)
	return app
}

// setUsageErrors makes a bad flag on any command a usage error (exit 2).
func setUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return usageError{fmt.Errorf("%w (see agentbox %s --help)", err, c.Name)}
		}
		setUsageErrors(c.Subcommands)
	}
}
