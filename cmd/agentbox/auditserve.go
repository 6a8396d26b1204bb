package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/agentbox/agentbox/workspace"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/proof"
	"github.com/agentbox/agentbox/audit/web"
	"github.com/urfave/cli/v2"
)

// auditServeCommand: audit serve FILE... [--addr 127.0.0.1:PORT].
func auditServeCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "a local, read-only web viewer of audit logs (sessions, timelines, filters, verification, live follow)",
		ArgsUsage: "FILE... [--addr 127.0.0.1:PORT]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:0", Usage: "listen address; anything but loopback requires a token, printed in the URL"},
			&cli.StringFlag{Name: "key-file", Usage: "HMAC key file to check MACs (else $AGENTBOX_AUDIT_KEY)"},
			&cli.StringFlag{Name: "checkpoint", Usage: "a signed checkpoint (agentbox audit checkpoint --sign-key) to check each log against; needs --verify-key"},
			&cli.StringFlag{Name: "verify-key", Usage: "verifier key of --checkpoint (or the file holding it)"},
		},
		Action: func(c *cli.Context) error {
			files, err := interspersed(c)
			if err != nil {
				return usageError{fmt.Errorf("%w (see agentbox audit serve --help)", err)}
			}
			if len(files) == 0 {
				return usageError{fmt.Errorf("audit serve needs at least one FILE (the default log is %s)", defaultAuditPath())}
			}
			for _, f := range files {
				if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
					return exitWith(exitUsage, fmt.Errorf("audit log %s: not a readable file (%v)", f, err))
				}
			}
			key, err := audit.KeyFromEnv(c.String("key-file"))
			if err != nil {
				return exitWith(exitUsage, err)
			}
			opts := web.Options{Key: key, Diff: copyDiff}
			if cp := c.String("checkpoint"); cp != "" {
				if opts.Checkpoint, err = os.ReadFile(cp); err != nil {
					return exitWith(exitUsage, fmt.Errorf("--checkpoint: %w", err))
				}
				if opts.VerifyKey, err = proof.ReadKey(c.String("verify-key")); err != nil || opts.VerifyKey == "" {
					return usageError{fmt.Errorf("--checkpoint needs --verify-key (the key printed by agentbox audit keygen): %v", err)}
				}
			}
			addr := c.String("addr")
			if !web.IsLoopback(addr) {
				if !c.IsSet("addr") {
					return usageError{errors.New("--addr must be given explicitly to listen beyond loopback")}
				}
				if opts.Token, err = web.NewToken(); err != nil {
					return err
				}
			}
			srv, err := web.New(files, opts)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return exitWith(exitUsage, fmt.Errorf("listening on %s: %w", addr, err))
			}
			u := url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/"}
			if opts.Token != "" {
				u.RawQuery = url.Values{"token": {opts.Token}}.Encode()
				fmt.Fprintf(c.App.ErrWriter, "warning: listening beyond loopback on %s; anyone with the URL (and the token in it) can read these logs\n", ln.Addr())
			}
			fmt.Fprintf(c.App.Writer, "agentbox audit viewer: %s (Ctrl-C stops)\n", u.String())
			return serveUntil(c.Context, ln, srv)
		},
	}
}

// serveUntil serves on ln until ctx ends, then shuts down.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	<-errc
	return nil
}

// copyDiff is the viewer's diff of a session's changes while its copy-mode
// workspace copy is still pending in the state directory.
func copyDiff(session string, w io.Writer) error {
	store, err := workspace.DefaultStore(os.Getenv)
	if err != nil {
		return web.ErrNoCopy
	}
	cp, err := store.Load(session)
	if errors.Is(err, workspace.ErrNoSession) {
		return web.ErrNoCopy
	}
	if err != nil {
		return err
	}
	if cp.State != workspace.StatePending {
		return web.ErrNoCopy
	}
	return workspace.WritePatch(w, cp.Workspace, cp.ChangedRoot(), cp.Meta.Changes)
}
