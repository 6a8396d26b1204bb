// Package wire is the framed request/response protocol between the host and
// the in-container executor.
//
// A frame is a 4-byte big-endian payload length followed by the payload.
// The first host-to-executor frame is the hello request, plain JSON, which
// carries a fresh per-session key; no other process exists in the container
// yet, so nobody else can read it. Every later frame, in both directions, is
// a 32-byte HMAC-SHA256 under that key followed by the JSON message. The MAC
// makes both sides reject frames that other processes in the container write
// into the container's stdio (for example through /proc/1/fd/0 or
// /proc/1/fd/1, which the engine's init holds); the executor itself is
// non-dumpable, so they cannot read the key from it. Ids must increase by
// one, so a replayed frame is rejected too.
//
// With `network: proxy` carried over the channel (Transport.DialProxy; the
// hello's proxy_channel), the connections programs make to the forwarder
// on sandbox.ProxyListenAddr travel as streams (stream.go): the executor
// opens one per connection, then both sides send data, eof (a half-close),
// close and credit frames. They are MAC'ed like every frame and binary
// (codec.go) with a direction tag, so a frame reflected back the way it
// came does not decode. Their sequencing:
//   - host to executor: stream frames are requests (OpStream) and take
//     the next request id like pings and answers; the executor's check
//     that ids increase by one covers them.
//   - executor to host: stream frames answer no request (id 0), so they
//     carry their own counter, Response.Seq, which starts at 1 and must
//     increase by one; stream ids must be opened in order 1, 2, 3, ….
//     Answers stay bound to the id of the request they answer.
//
// A replayed, reordered, dropped or forged stream frame, one for a
// stream never opened, or an open beyond MaxStreams, is a broken channel:
// the host kills the sandbox at once (without waiting for a call) and
// every proxied connection ends. Flow control is per stream: a side sends
// at most StreamWindow bytes the receiver has not granted back, so a
// stuck connection holds at most that much on each side and stops only
// its own sender; the frame readers never block on a stream, so requests,
// answers and heartbeats keep flowing. The open frame names no address:
// the host dials only its proxy, and a failed dial refuses the connection.
package wire

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentbox/agentbox/sandbox"
)

// MaxFrame bounds every frame in both directions. Files larger than what
// fits are refused before they are framed.
const MaxFrame = 48 << 20

// Defaults for a call that does not set them, shared by the host and the
// executor (see sandbox.DefaultCallTimeout and sandbox.DefaultOutputCap).
const (
	DefaultTimeout   = sandbox.DefaultCallTimeout
	DefaultOutputCap = sandbox.DefaultOutputCap
)

// MaxFileBytes is the largest file content read_file returns or write_file
// accepts in one request (base64 inflates it by 4/3 inside a frame).
const MaxFileBytes = 32 << 20

// Ops.
const (
	OpHello = "hello"
	OpExec  = "exec"
	OpRead  = "read_file"
	OpWrite = "write_file"
	// OpPing is a heartbeat: no answer; any frame resets the executor's
	// dead man's switch.
	OpPing = "ping"
	// OpAnswer answers an Ask the executor sent during an exec.
	OpAnswer = "answer"
	// OpStream carries one frame of a proxied connection (Request.Stream)
	// when the hello asked for ProxyChannel; no answer.
	OpStream = "stream"
	// OpCancel ends the running exec named by Target (its process tree is
	// killed; the exec answers with Interrupted); no answer of its own.
	// The sandbox and the session go on.
	OpCancel = "cancel"
)

// Rules mirror sandbox.FileRules: globs relative to /workspace.
type Rules struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// Request is one host-to-executor message.
type Request struct {
	ID   uint64 `json:"id"`
	Op   string `json:"op"`
	Key  []byte `json:"key,omitempty"` // hello only
	Keep bool   `json:"keep,omitempty"`
	Cap  int    `json:"cap,omitempty"` // hello: output cap in bytes
	// Proxy (hello only) is the unix socket of the host-side network
	// proxy inside the container; set, the executor runs the forwarder of
	// `network: proxy` on sandbox.ProxyListenAddr.
	Proxy string `json:"proxy,omitempty"`
	// ProxyChannel (hello only) runs the forwarder of `network: proxy` on
	// sandbox.ProxyListenAddr with every connection carried as a stream
	// over this channel (see stream.go) instead of a socket.
	ProxyChannel bool `json:"proxy_channel,omitempty"`
	// Stream is the frame of an OpStream request (binary; see stream.go).
	Stream *StreamFrame `json:"-"`

	Command   string `json:"command,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
	// Target is the id of the exec an OpCancel ends.
	Target uint64 `json:"target,omitempty"`

	Path    []byte `json:"path,omitempty"` // bytes: names need not be UTF-8
	Offset  int64  `json:"offset,omitempty"`
	Limit   int64  `json:"limit,omitempty"`
	Content []byte `json:"content,omitempty"`
	Rules   *Rules `json:"rules,omitempty"`
	Write   bool   `json:"write,omitempty"` // rules are files.write rules

	// Hello: exec-time enforcement and the dead man's switch (see hello.go).
	Policy     []byte `json:"policy,omitempty"`      // policy source (YAML) judging every exec
	PolicyName string `json:"policy_name,omitempty"` // for messages
	Approver   bool   `json:"approver,omitempty"`    // the host answers asks
	DeadlineMS int64  `json:"deadline_ms,omitempty"` // silence longer than this kills everything
	Effects    *Rules `json:"effects,omitempty"`     // files.write rules checked after every exec
	// Staged (hello): the host decides the workspace's changes after every
	// call (a staged overlay): the executor walks nothing itself.
	Staged  bool `json:"staged,omitempty"`
	PidsMax int  `json:"pids_max,omitempty"` // the container's pids limit
	// SetIDFilter (hello): the executor filters set-id mode bits out of
	// every command's system calls itself (sandbox.Enforcement.SetIDFilter).
	SetIDFilter bool `json:"setid_filter,omitempty"`
	// Manifest (hello) is the image's executables by content (see
	// sandbox.Manifest); without one, BuildManifest asks the executor to
	// make it before any command runs and return it in the response.
	Manifest      *sandbox.Manifest `json:"manifest,omitempty"`
	BuildManifest bool              `json:"build_manifest,omitempty"`
	// Expect (exec) are the programs the up-front analysis predicted; a
	// program that runs and is not among them is an unexpected_exec
	// alarm. Nil: no such check.
	Expect []string `json:"expect,omitempty"`

	Answer *Answer `json:"answer,omitempty"` // OpAnswer

	// StreamOutput (exec) asks for the command's output as it is written:
	// Out frames carrying the exec's id, stdout and stderr apart (see
	// output.go); the final response still carries the capped Output.
	StreamOutput bool `json:"stream_output,omitempty"`

	Copy *CopyReq `json:"copy,omitempty"` // OpCopyIn, OpCopyOut (copy.go)
}

// Response is one executor-to-host message.
type Response struct {
	ID    uint64 `json:"id"`
	Error string `json:"error,omitempty"`
	// Denied is set when the resolved path is refused by the rules.
	Denied bool   `json:"denied,omitempty"`
	Rule   string `json:"rule,omitempty"`

	ExitCode    int    `json:"exit_code"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"` // ended by an OpCancel
	OOMKilled   bool   `json:"oom_killed,omitempty"`
	DurationNS  int64  `json:"duration_ns,omitempty"`
	Output      []byte `json:"output,omitempty"`
	OutputBytes int64  `json:"output_bytes,omitempty"`
	OutputSHA   string `json:"output_sha256,omitempty"`
	Truncated   bool   `json:"truncated,omitempty"`

	Content  []byte `json:"content,omitempty"`
	Size     int64  `json:"size,omitempty"`
	Resolved []byte `json:"resolved,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Version  string `json:"version,omitempty"`
	// Hello: the executor's protocol (see Protocol) and its network
	// interfaces (a sandbox with network: none must have only lo).
	Protocol string   `json:"protocol,omitempty"`
	Ifaces   []string `json:"ifaces,omitempty"`
	// Manifest (hello) is the manifest the executor made (BuildManifest).
	Manifest *sandbox.Manifest `json:"manifest,omitempty"`
	// CanCancel (hello answer): the executor ends an exec on OpCancel.
	// Without it (an older executor, e.g. baked into a cluster image) a
	// cancelled call kills the sandbox as before.
	CanCancel bool `json:"can_cancel,omitempty"`

	// Exec: what the tracer and the effects check saw (see report.go).
	// Ask is set on an intermediate frame that carries the exec's id and
	// waits for an OpAnswer; the final response follows.
	Ask      *Ask       `json:"ask,omitempty"`
	Programs []Program  `json:"programs,omitempty"`
	Dropped  int        `json:"programs_dropped,omitempty"`
	Execs    []ExecStop `json:"denied_execs,omitempty"`
	Alarms   []Alarm    `json:"alarms,omitempty"`

	// Out is set on an intermediate frame of an exec that asked for
	// StreamOutput: a piece of its output; more frames or the final
	// response follow.
	Out *OutChunk `json:"out,omitempty"`

	// Seq numbers the frames the executor sends on its own (stream frames,
	// which answer no request, with ID 0): 1, 2, 3, … (see the package doc).
	// Stream frames are binary (see codec.go), never JSON.
	Seq    uint64       `json:"-"`
	Stream *StreamFrame `json:"-"`

	Copy *CopyResp `json:"copy,omitempty"` // OpCopyIn, OpCopyOut (copy.go)
}

// ErrFrameTooLarge is returned for a frame whose length exceeds MaxFrame.
var ErrFrameTooLarge = errors.New("frame exceeds the size limit")

// ErrBadMAC is returned for a response frame whose MAC does not verify.
var ErrBadMAC = errors.New("response frame failed authentication (forged or corrupted)")

// WriteFrame writes one frame carrying payload.
func WriteFrame(w io.Writer, payload []byte) error {
	if len(payload) > MaxFrame {
		return ErrFrameTooLarge
	}
	buf := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[4:], payload)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame, refusing any longer than MaxFrame.
func ReadFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// WriteRequest frames a request; with a nil key (hello only) it is sent
// without a MAC.
func WriteRequest(w io.Writer, key []byte, req *Request) error {
	return writeMessage(w, key, req)
}

// ReadRequest reads a request, checks its MAC (unless key is nil: hello)
// and decodes it strictly.
func ReadRequest(r io.Reader, key []byte) (*Request, error) {
	var req Request
	if err := readMessage(r, key, &req); err != nil {
		return nil, fmt.Errorf("bad request frame: %w", err)
	}
	return &req, nil
}

// WriteResponse frames a response with its MAC.
func WriteResponse(w io.Writer, key []byte, resp *Response) error {
	return writeMessage(w, key, resp)
}

// ReadResponse reads one response, checks its MAC and decodes it strictly.
func ReadResponse(r io.Reader, key []byte) (*Response, error) {
	var resp Response
	if err := readMessage(r, key, &resp); err != nil {
		return nil, fmt.Errorf("bad response frame: %w", err)
	}
	return &resp, nil
}

func writeMessage(w io.Writer, key []byte, v any) error {
	if frame := streamFrameBytes(key, v); frame != nil {
		_, err := w.Write(frame)
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if key == nil {
		return WriteFrame(w, b)
	}
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return WriteFrame(w, append(m.Sum(nil), b...))
}

func readMessage(r io.Reader, key []byte, v any) error {
	b, err := ReadFrame(r)
	if err != nil {
		return err
	}
	if key != nil {
		if len(b) < sha256.Size {
			return ErrBadMAC
		}
		m := hmac.New(sha256.New, key)
		m.Write(b[sha256.Size:])
		if !hmac.Equal(m.Sum(nil), b[:sha256.Size]) {
			return ErrBadMAC
		}
		b = b[sha256.Size:]
		if len(b) > 0 && b[0] != '{' {
			if err := decodeStream(b, v); err != nil {
				return fmt.Errorf("%w: %w", errStreamProtocol, err)
			}
			return nil
		}
	}
	return strictDecode(b, v)
}

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after JSON value")
	}
	return nil
}
