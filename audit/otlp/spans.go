package otlp

import (
	"context"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/audit"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"
)

// Attribute names: OpenTelemetry's semantic conventions where they exist
// (process.*, gen_ai.*), agentbox.* otherwise.
const (
	attrSession  = "agentbox.session"
	attrCallID   = "agentbox.call_id"
	attrDecision = "agentbox.decision"
	attrRule     = "agentbox.rule"
	attrEvent    = "agentbox.event"
)

type session struct {
	ctx   context.Context
	span  trace.Span
	model string
	calls map[string]call
}

type call struct {
	ctx  context.Context
	span trace.Span
	cmd  string
}

// state follows the sessions of the log.
type state struct {
	tracer   trace.Tracer
	logger   otellog.Logger
	sessions map[string]*session
}

func newState(t trace.Tracer, l otellog.Logger) *state {
	return &state{tracer: t, logger: l, sessions: map[string]*session{}}
}

func (st *state) session(rec *audit.Record) *session {
	s := st.sessions[rec.Session]
	if s == nil {
		ctx, span := st.tracer.Start(context.Background(), "agentbox session", trace.WithTimestamp(rec.Time),
			trace.WithAttributes(attribute.String(attrSession, rec.Session)))
		s = &session{ctx: ctx, span: span, calls: map[string]call{}}
		st.sessions[rec.Session] = s
	}
	return s
}

func decisionAttrs(rec *audit.Record) []attribute.KeyValue {
	var a []attribute.KeyValue
	if rec.CallID != "" {
		a = append(a, attribute.String(attrCallID, rec.CallID))
	}
	if rec.Decision != "" {
		a = append(a, attribute.String(attrDecision, rec.Decision))
	}
	if rec.Rule != "" {
		a = append(a, attribute.String(attrRule, rec.Rule))
	}
	return a
}

// record turns one record into spans and a log record.
func (st *state) record(rec *audit.Record, line []byte) {
	s := st.session(rec)
	logCtx := s.ctx
	switch rec.Event {
	case audit.EventSessionStart:
		s.model = rec.Model
		s.span.SetAttributes(attribute.String("agentbox.task", rec.Task), attribute.String("gen_ai.request.model", rec.Model),
			attribute.String("container.image.name", rec.Image), attribute.String("container.id", rec.ContainerID),
			attribute.String("agentbox.version", rec.Version), attribute.String("user.name", rec.User), attribute.String("host.name", rec.Host))
	case audit.EventModelCall:
		start := rec.Time
		if rec.DurationMS != nil {
			start = rec.Time.Add(-time.Duration(*rec.DurationMS) * time.Millisecond)
		}
		_, span := st.tracer.Start(s.ctx, "chat "+s.model, trace.WithTimestamp(start), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", s.model),
			attribute.Int("gen_ai.usage.input_tokens", rec.PromptTokens), attribute.Int("gen_ai.usage.output_tokens", rec.CompletionTokens),
			attribute.StringSlice("gen_ai.response.finish_reasons", []string{rec.FinishReason}), attribute.Int("agentbox.step", rec.Step)))
		span.End(trace.WithTimestamp(rec.Time))
	case audit.EventToolCall:
		logCtx = st.toolCall(s, rec)
	case audit.EventExecDenied:
		c := s.calls[rec.CallID]
		parent := s.ctx
		if c.ctx != nil {
			parent = c.ctx
		}
		logCtx = parent
		_, span := st.tracer.Start(parent, "exec "+first(rec.Argv), trace.WithTimestamp(rec.Time), trace.WithAttributes(append(decisionAttrs(rec),
			attribute.StringSlice("process.command_args", rec.Argv), attribute.Int("process.pid", rec.PID),
			attribute.String("process.executable.path", rec.Exe))...))
		span.SetStatus(codes.Error, "denied at exec: "+rec.Reason)
		span.End(trace.WithTimestamp(rec.Time))
	case audit.EventApproval, audit.EventAlarm, audit.EventNet:
		if c, ok := s.calls[rec.CallID]; ok && rec.CallID != "" {
			logCtx = c.ctx
			c.span.AddEvent("agentbox."+rec.Event, trace.WithTimestamp(rec.Time), trace.WithAttributes(decisionAttrs(rec)...))
		}
	case audit.EventSessionEnd:
		s.span.SetAttributes(attribute.String("agentbox.status", rec.Status), attribute.Int("agentbox.steps", rec.Steps))
		if rec.Status != "ok" {
			s.span.SetStatus(codes.Error, rec.Status)
		}
	}
	st.log(logCtx, rec, line)
	if rec.Event == audit.EventSessionEnd {
		st.end(rec.Session, rec.Time)
	}
}

// toolCall opens the call's span at its decision and closes it at its
// result, with an exec span for execute_bash.
func (st *state) toolCall(s *session, rec *audit.Record) context.Context {
	if rec.Phase != audit.PhaseResult {
		cmd, _ := rec.Args["command"].(string)
		ctx, span := st.tracer.Start(s.ctx, "execute_tool "+rec.Tool, trace.WithTimestamp(rec.Time), trace.WithAttributes(append(decisionAttrs(rec),
			attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", rec.Tool),
			attribute.String("gen_ai.tool.call.id", rec.CallID), attribute.String("agentbox.decided_by", rec.DecidedBy))...))
		if !audit.Ran(rec.Decision) { // a learning run's would_ask/would_deny ran
			span.SetStatus(codes.Error, "denied: "+rec.Rule)
			span.End(trace.WithTimestamp(rec.Time))
			return ctx
		}
		s.calls[rec.CallID] = call{ctx: ctx, span: span, cmd: cmd}
		return ctx
	}
	c, ok := s.calls[rec.CallID]
	if !ok {
		return s.ctx
	}
	delete(s.calls, rec.CallID)
	if rec.Tool == "execute_bash" {
		start := rec.Time
		if rec.DurationMS != nil {
			start = rec.Time.Add(-time.Duration(*rec.DurationMS) * time.Millisecond)
		}
		attrs := append(decisionAttrs(rec), attribute.StringSlice("process.command_args", []string{"bash", "-c", c.cmd}))
		if rec.ExitCode != nil {
			attrs = append(attrs, attribute.Int("process.exit.code", *rec.ExitCode))
		}
		_, span := st.tracer.Start(c.ctx, "exec bash", trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		if rec.ExitCode != nil && *rec.ExitCode != 0 {
			span.SetStatus(codes.Error, "exit code "+strconv.Itoa(*rec.ExitCode))
		}
		span.End(trace.WithTimestamp(rec.Time))
	}
	if rec.Error != "" || rec.Decision == "deny" {
		c.span.SetStatus(codes.Error, rec.Error)
	}
	c.span.End(trace.WithTimestamp(rec.Time))
	return c.ctx
}

// log emits the record as an OTLP log record: the line as body, linked to
// the span it belongs to.
func (st *state) log(ctx context.Context, rec *audit.Record, line []byte) {
	var r otellog.Record
	r.SetTimestamp(rec.Time)
	r.SetEventName("agentbox." + rec.Event)
	r.SetBody(attribute.StringValue(string(line)))
	sev, text := otellog.SeverityInfo, "INFO"
	switch {
	case rec.Event == audit.EventAlarm, rec.Event == audit.EventError:
		sev, text = otellog.SeverityError, "ERROR"
	case rec.Decision == "deny", rec.Event == audit.EventExecDenied:
		sev, text = otellog.SeverityWarn, "WARN"
	}
	r.SetSeverity(sev)
	r.SetSeverityText(text)
	attrs := []attribute.KeyValue{attribute.String(attrEvent, rec.Event), attribute.String(attrSession, rec.Session), attribute.Int64("agentbox.seq", rec.Seq)}
	for _, kv := range []struct{ k, v string }{{attrCallID, rec.CallID}, {"agentbox.tool", rec.Tool}, {attrDecision, rec.Decision}, {attrRule, rec.Rule}} {
		if kv.v != "" {
			attrs = append(attrs, attribute.String(kv.k, kv.v))
		}
	}
	r.AddAttributes(attrs...)
	st.logger.Emit(ctx, r)
}

// end closes a session's spans.
func (st *state) end(id string, t time.Time) {
	s := st.sessions[id]
	if s == nil {
		return
	}
	for _, c := range s.calls {
		c.span.SetStatus(codes.Error, "no result recorded")
		c.span.End(trace.WithTimestamp(t))
	}
	s.span.End(trace.WithTimestamp(t))
	delete(st.sessions, id)
}

// endAll closes what is still open when the sink closes (sessions that
// did not end in this log, or not yet).
func (st *state) endAll() {
	now := time.Now()
	for id := range st.sessions {
		st.end(id, now)
	}
}

func first(argv []string) string {
	if len(argv) == 0 {
		return "?"
	}
	return argv[0]
}
