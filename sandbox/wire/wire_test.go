package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	var buf bytes.Buffer
	in := &Response{ID: 7, ExitCode: 3, Output: []byte{0, 0xff, '\n'}}
	if err := WriteResponse(&buf, key, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadResponse(&buf, key)
	if err != nil {
		t.Fatal(err)
	}
	if out.ID != 7 || out.ExitCode != 3 || !bytes.Equal(out.Output, in.Output) {
		t.Fatalf("got %+v", out)
	}
}

func TestForgedResponseRejected(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteResponse(&buf, []byte("attacker-key"), &Response{ID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResponse(&buf, []byte("session-key")); !errors.Is(err, ErrBadMAC) {
		t.Fatalf("want ErrBadMAC, got %v", err)
	}
}

func TestForgedRequestRejected(t *testing.T) {
	key := []byte("session-key-0123456789abcdef")
	var buf bytes.Buffer
	if err := WriteRequest(&buf, key, &Request{ID: 2, Op: OpExec, Command: "true"}); err != nil {
		t.Fatal(err)
	}
	if r, err := ReadRequest(&buf, key); err != nil || r.Command != "true" {
		t.Fatalf("authentic request: %v %v", r, err)
	}
	_ = WriteRequest(&buf, nil, &Request{ID: 2, Op: OpExec, Command: "true"})
	if _, err := ReadRequest(&buf, key); !errors.Is(err, ErrBadMAC) {
		t.Fatalf("unauthenticated request: want ErrBadMAC, got %v", err)
	}
}

func TestOversizedFrameRefused(t *testing.T) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], MaxFrame+1)
	if _, err := ReadFrame(bytes.NewReader(hdr[:])); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("want ErrFrameTooLarge, got %v", err)
	}
}

func TestTruncatedFrame(t *testing.T) {
	var buf bytes.Buffer
	_ = WriteFrame(&buf, []byte("hello world"))
	b := buf.Bytes()[:8]
	if _, err := ReadFrame(bytes.NewReader(b)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("want ErrUnexpectedEOF, got %v", err)
	}
}

func TestStrictRequest(t *testing.T) {
	var buf bytes.Buffer
	_ = WriteFrame(&buf, []byte(`{"id":1,"op":"exec","bogus":true}`))
	if _, err := ReadRequest(&buf, nil); err == nil {
		t.Fatal("unknown field accepted")
	}
	buf.Reset()
	_ = WriteFrame(&buf, []byte(`{"id":1,"op":"exec"} {"id":2}`))
	if _, err := ReadRequest(&buf, nil); err == nil {
		t.Fatal("trailing data accepted")
	}
}

func FuzzReadResponse(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ReadResponse(bytes.NewReader(b), []byte("k"))
		_, _ = ReadRequest(bytes.NewReader(b), nil)
		_, _ = ReadRequest(bytes.NewReader(b), []byte("k"))
	})
}
