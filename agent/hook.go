package agent

import "context"

// CallHook is the host-side step after each tool call (session.Session
// implements it: the promotion of a staged workspace's changes, held
// changes reported to the model). The pipeline calls it after every call
// that did not end the session, whether the call ran or not (a kept
// background process may have changed files meanwhile), before the Outcome
// is returned. It may amend o.Text and o.Alarms; text it adds is redacted
// and capped like the rest. An error becomes the Outcome's Err and ends the
// session.
type CallHook interface {
	AfterCall(ctx context.Context, o *Outcome) error
}

// CallWaiter is the optional power of a CallHook whose step may outlast
// the call's result (a staged workspace finishes a bulk call's promotion
// while the model thinks): the pipeline calls BeforeCall before each tool
// call, before anything of it is decided or recorded, and it waits for
// the last step to finish. An error ends the session, as AfterCall's.
type CallWaiter interface {
	BeforeCall(ctx context.Context) error
}
