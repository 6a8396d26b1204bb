package mcp

import (
	"context"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressEvery is how often a running call reports progress to a client
// that asked for it (a progressToken in the request's _meta).
const progressEvery = time.Second

// reportProgress sends notifications/progress for req every progressEvery
// until the returned stop is called; nothing when the client sent no
// progress token. Progress is the seconds the call has run; there is no
// total (a command's length is unknown).
func reportProgress(ctx context.Context, req *sdk.CallToolRequest, tool string) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s := time.Since(start).Seconds()
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: s,
					Message: fmt.Sprintf("%s running for %.0fs", tool, s)})
			}
		}
	}()
	return func() { cancel(); <-done }
}
