package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one inbound message (the SDK's default).
const maxLine = sdk.DefaultMaxLineLength

// lineTransport is the stdio transport: newline-delimited JSON-RPC, like
// the SDK's IOTransport, except that a bad line is answered and skipped
// instead of ending the connection: a line that is not JSON gets -32700
// (parse error), JSON that is not a JSON-RPC message (wrong version tag,
// method not a string, an id that is neither a string nor a number, a
// batch, an over-long line) gets -32600 (invalid request). The SDK then
// answers what is valid (unknown methods, bad params) itself.
type lineTransport struct {
	in  io.ReadCloser
	out io.WriteCloser
	// ended is closed when the input ends (EOF, a read error): the
	// connection is going, whatever the SDK cancels next.
	ended chan struct{}
}

func newLineTransport(in io.ReadCloser, out io.WriteCloser) *lineTransport {
	return &lineTransport{in: in, out: out, ended: make(chan struct{})}
}

var _ sdk.Transport = (*lineTransport)(nil)

// Connect implements sdk.Transport.
func (t *lineTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{in: t.in, out: t.out, incoming: make(chan lineMsg), closed: make(chan struct{}), ended: t.ended}
	go c.readLoop()
	return c, nil
}

type lineMsg struct {
	msg jsonrpc.Message
	err error
}

// lineConn is one connection over lineTransport.
type lineConn struct {
	in       io.ReadCloser
	out      io.WriteCloser
	wmu      sync.Mutex
	incoming chan lineMsg
	closed   chan struct{}
	ended    chan struct{} // closed by readLoop when it returns
	once     sync.Once
	closeErr error
}

var _ sdk.Connection = (*lineConn)(nil)

// readLoop reads lines until stdin ends or the connection closes;
// messages go to Read, bad lines are answered here.
func (c *lineConn) readLoop() {
	var once sync.Once
	end := func() { once.Do(func() { close(c.ended) }) }
	defer end()
	r := bufio.NewReaderSize(c.in, 64<<10)
	for {
		line, tooLong, err := readLine(r, maxLine)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			msg, code, why := decodeLine(line, tooLong)
			if code != 0 {
				if werr := c.writeRaw(errorLine(idOf(line), code, why)); werr != nil {
					c.deliver(lineMsg{err: werr})
					return
				}
			} else if !c.deliver(lineMsg{msg: msg}) {
				return
			}
		}
		if err != nil {
			end() // before the SDK hears of it and cancels the calls
			c.deliver(lineMsg{err: err})
			return
		}
	}
}

func (c *lineConn) deliver(m lineMsg) bool {
	select {
	case c.incoming <- m:
		return true
	case <-c.closed:
		return false
	}
}

// readLine reads one line without its newline; a line over max is
// consumed to its end and reported as tooLong (its first bytes kept).
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max {
				tooLong = true
				line = append(line, chunk[:min(len(chunk), 256)]...)
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// decodeLine decodes one line: a message, or the JSON-RPC error code and
// reason to answer it with.
func decodeLine(line []byte, tooLong bool) (jsonrpc.Message, int64, string) {
	if tooLong {
		return nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: a message longer than %d bytes", maxLine)
	}
	if !json.Valid(line) {
		return nil, jsonrpc.CodeParseError, "parse error: the line is not JSON"
	}
	if b := bytes.TrimSpace(line); len(b) == 0 || b[0] != '{' {
		return nil, jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message is a JSON object (batches are not supported)"
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, jsonrpc.CodeInvalidRequest, "invalid request: " + clip(err.Error(), 200)
	}
	return msg, 0, ""
}

// idOf is the id of a line that could not be served, when it has a
// usable one (a string or a number), else JSON null.
func idOf(line []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 {
		var v any
		if json.Unmarshal(m.ID, &v) == nil {
			switch v.(type) {
			case string, float64:
				return m.ID
			}
		}
	}
	return json.RawMessage("null")
}

func errorLine(id json.RawMessage, code int64, why string) []byte {
	b, _ := json.Marshal(struct {
		V     string          `json:"jsonrpc"`
		ID    json.RawMessage `json:"id"`
		Error jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: why}})
	return append(b, '\n')
}

// Read implements sdk.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		return m.msg, m.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements sdk.Connection.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	return c.writeRaw(append(data, '\n'))
}

func (c *lineConn) writeRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.out.Write(b)
	return err
}

// Close implements sdk.Connection.
func (c *lineConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.in.Close(), c.out.Close())
	})
	return c.closeErr
}

// SessionID implements sdk.Connection: stdio has none.
func (c *lineConn) SessionID() string { return "" }
