package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals end a run the same way: the current call ends, the sandbox
// is removed, session_end is written; the exit code is 128 + the signal's
// number (SIGHUP 129, SIGINT 130, SIGTERM 143), as a shell reports it.
// SIGHUP is the terminal closing.
var stopSignals = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM}

// signalError is the cause of a context ended by a signal; it is
// context.Canceled for errors.Is.
type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string { return fmt.Sprintf("interrupted (%s)", e.sig) }
func (e signalError) Unwrap() error { return context.Canceled }

// exitCode is the shell's code for a process ended by the signal.
func (e signalError) exitCode() int { return 128 + int(e.sig) }

// signalContext is ctx, ended by the first of stopSignals with a
// signalError cause. After it, the default actions come back: a second
// signal kills agentbox. stop releases the handler.
func signalContext(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case s := <-ch:
			signal.Stop(ch)
			sig, _ := s.(syscall.Signal)
			cancel(signalError{sig})
		case <-ctx.Done():
			signal.Stop(ch)
		}
	}()
	return ctx, func() { cancel(nil); <-done }
}

// interruptedCode is the exit code of a run whose context ended: the
// signal's, else 130.
func interruptedCode(ctx context.Context) int {
	if se, ok := context.Cause(ctx).(signalError); ok {
		return se.exitCode()
	}
	return exitInterrupted
}
