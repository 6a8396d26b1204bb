package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Stream frames are binary, not JSON (base64 in JSON costs more than
// everything else on the path). The payload, after the MAC that covers it
// like any other:
//
//	tag    1 byte   tagToExecutor or tagToHost: the direction (a frame
//	                reflected back the other way does not decode)
//	seq    8 bytes  host: the request id; executor: Response.Seq
//	stream 8 bytes  StreamFrame.ID
//	kind   1 byte   1 open, 2 data, 3 eof, 4 close, 5 credit
//	credit 4 bytes  StreamFrame.Credit
//	rest            data (data) or the reason (close); empty otherwise
const (
	tagToExecutor = 0x01
	tagToHost     = 0x02
	streamHeader  = 1 + 8 + 8 + 1 + 4
)

var streamKinds = [...]string{1: StreamOpen, 2: StreamData, 3: StreamEOF, 4: StreamClose, 5: StreamCredit}

func kindCode(kind string) byte {
	for i, k := range streamKinds {
		if k == kind && i > 0 {
			return byte(i)
		}
	}
	return 0
}

// streamFrameBytes returns the whole frame (length, MAC, payload) of a
// stream request or response, or nil for anything else (JSON).
func streamFrameBytes(key []byte, v any) []byte {
	var (
		tag byte
		seq uint64
		f   *StreamFrame
	)
	switch m := v.(type) {
	case *Request:
		if m.Stream == nil || m.Op != OpStream {
			return nil
		}
		tag, seq, f = tagToExecutor, m.ID, m.Stream
	case *Response:
		if m.Stream == nil {
			return nil
		}
		tag, seq, f = tagToHost, m.Seq, m.Stream
	default:
		return nil
	}
	if key == nil {
		return nil
	}
	rest := f.Data
	if f.Kind == StreamClose {
		rest = []byte(f.Error)
	}
	n := sha256.Size + streamHeader + len(rest)
	buf := make([]byte, 4+n)
	binary.BigEndian.PutUint32(buf, uint32(n))
	p := buf[4+sha256.Size:]
	p[0] = tag
	binary.BigEndian.PutUint64(p[1:], seq)
	binary.BigEndian.PutUint64(p[9:], f.ID)
	p[17] = kindCode(f.Kind)
	binary.BigEndian.PutUint32(p[18:], uint32(max(f.Credit, 0)))
	copy(p[streamHeader:], rest)
	m := hmac.New(sha256.New, key)
	m.Write(p)
	m.Sum(buf[4:4])
	return buf
}

// decodeStream decodes an authenticated binary payload into v, which must
// be the direction its tag names.
func decodeStream(b []byte, v any) error {
	if len(b) < streamHeader {
		return errors.New("a short stream frame")
	}
	code := b[17]
	if int(code) >= len(streamKinds) || code == 0 {
		return fmt.Errorf("a stream frame of unknown kind %d", code)
	}
	f := &StreamFrame{ID: binary.BigEndian.Uint64(b[9:]), Kind: streamKinds[code], Credit: int(binary.BigEndian.Uint32(b[18:]))}
	rest := b[streamHeader:]
	switch f.Kind {
	case StreamData:
		f.Data = rest
	case StreamClose:
		f.Error = string(rest)
	default:
		if len(rest) > 0 {
			return fmt.Errorf("a %s stream frame with %d bytes of payload", f.Kind, len(rest))
		}
	}
	seq := binary.BigEndian.Uint64(b[1:])
	switch m := v.(type) {
	case *Request:
		if b[0] != tagToExecutor {
			return errors.New("not a request frame")
		}
		*m = Request{ID: seq, Op: OpStream, Stream: f}
	case *Response:
		if b[0] != tagToHost {
			return errors.New("not a response frame")
		}
		*m = Response{Seq: seq, Stream: f}
	default:
		return errors.New("a stream frame where none can be")
	}
	return nil
}
