package workspace

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/agentbox/agentbox/internal/fstree"
)

// The staging records of a call that changed 10,000 files are megabytes
// of JSON (the journal, the checkpoint, stage.json). They are encoded
// here without reflection, byte for byte as encoding/json encodes them
// (TestRecordJSONIsEncodingJSON): a promotion's records cost a few
// milliseconds, not a few hundred.

// marshalRecord is json.Marshal(v), faster for the staging records.
func marshalRecord(v any) ([]byte, error) {
	switch r := v.(type) {
	case *Checkpoint:
		return r.appendJSON(nil)
	case Checkpoint:
		return r.appendJSON(nil)
	case stageState:
		return r.appendJSON(nil), nil
	case *stageState:
		return r.appendJSON(nil), nil
	}
	return json.Marshal(v)
}

func (c *Checkpoint) appendJSON(b []byte) ([]byte, error) {
	b = slices.Grow(b, 256*(len(c.Changes)+len(c.After)))
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, int64(c.Seq), 10)
	b = append(b, `,"call_id":`...)
	b = appendString(b, c.CallID)
	t, err := c.Time.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(b, `,"time":`...)
	b = append(b, t...)
	b = append(b, `,"changes":`...)
	if c.Changes == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range c.Changes {
			if i > 0 {
				b = append(b, ',')
			}
			b = c.Changes[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	if len(c.After) > 0 {
		b = append(b, `,"after":{`...)
		for i, k := range sortedKeys(c.After) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendStamp(b, c.After[k])
		}
		b = append(b, '}')
	}
	if len(c.BeforeMode) > 0 {
		b = append(b, `,"before_mode":{`...)
		for i, k := range sortedKeys(c.BeforeMode) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = strconv.AppendUint(b, uint64(c.BeforeMode[k]), 10)
		}
		b = append(b, '}')
	}
	if c.Kept {
		b = append(b, `,"kept":true`...)
	}
	return append(b, '}'), nil
}

func (c *StagedChange) appendJSON(b []byte) []byte {
	b = append(b, `{"path":`...)
	b = appendString(b, c.Path)
	b = append(b, `,"change":`...)
	b = appendString(b, c.Change)
	b = append(b, `,"type":`...)
	b = appendString(b, c.Type)
	for _, f := range [...]struct{ name, v string }{{`,"held":`, c.Held}, {`,"why":`, c.Why},
		{`,"sha256_before":`, c.Before}, {`,"sha256_after":`, c.After}} {
		if f.v != "" {
			b = append(b, f.name...)
			b = appendString(b, f.v)
		}
	}
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, c.Bytes, 10)
	if c.SetIDCut {
		b = append(b, `,"setid_cleared":true`...)
	}
	return append(b, '}')
}

func (s *stageState) appendJSON(b []byte) []byte {
	b = slices.Grow(b, 256*(len(s.Promoted)+len(s.Kept)))
	b = append(b, `{"since_ns":`...)
	b = strconv.AppendInt(b, s.Since, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, int64(s.Seq), 10)
	b = appendEntries(b, `,"promoted":{`, s.Promoted)
	if s.HeldBytes != 0 {
		b = append(b, `,"held_bytes":`...)
		b = strconv.AppendInt(b, s.HeldBytes, 10)
	}
	b = appendEntries(b, `,"kept":{`, s.Kept)
	if len(s.GitDirs) > 0 {
		b = append(b, `,"git_dirs":{`...)
		for i, k := range sortedKeys(s.GitDirs) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = strconv.AppendBool(append(b, ':'), s.GitDirs[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendEntries appends a non-empty map of promoted entries after name.
func appendEntries(b []byte, name string, m map[string]promotedEntry) []byte {
	if len(m) == 0 {
		return b
	}
	b = append(b, name...)
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, `:{"upper":`...)
		b = appendStamp(b, m[k].Upper)
		b = append(b, `,"lower":`...)
		b = appendStamp(b, m[k].Lower)
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendStamp(b []byte, s fstree.Stamp) []byte {
	b = strconv.AppendUint(append(b, `{"ino":`...), s.Ino, 10)
	b = strconv.AppendUint(append(b, `,"dev":`...), s.Dev, 10)
	b = strconv.AppendUint(append(b, `,"mode":`...), uint64(s.Mode), 10)
	b = strconv.AppendInt(append(b, `,"size":`...), s.Size, 10)
	b = strconv.AppendInt(append(b, `,"mtime":`...), s.MTime, 10)
	b = strconv.AppendInt(append(b, `,"ctime":`...), s.CTime, 10)
	if s.Rdev != 0 {
		b = strconv.AppendUint(append(b, `,"rdev":`...), s.Rdev, 10)
	}
	return append(b, '}')
}

// appendString appends s as encoding/json quotes it: printable ASCII
// directly, anything else (escapes, HTML characters, UTF-8) by
// encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
