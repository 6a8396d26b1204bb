package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
)

// capture keeps the first and last bytes of a stream within a fixed budget,
// counting and hashing everything. Memory stays bounded whatever the command
// prints.
type capture struct {
	headCap, tailCap int
	head             []byte
	tail             []byte // ring buffer once full
	tailPos          int
	tailFull         bool
	total            int64
	sum              hash.Hash
}

func newCapture(limit int) *capture {
	h := limit / 2
	return &capture{headCap: h, tailCap: limit - h, sum: sha256.New()}
}

func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	c.sum.Write(p)
	n := len(p)
	if room := c.headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if c.tailCap == 0 {
		return n, nil
	}
	if len(p) >= c.tailCap {
		c.tail = append(c.tail[:0], p[len(p)-c.tailCap:]...)
		c.tailPos, c.tailFull = 0, true
		return n, nil
	}
	for len(p) > 0 {
		if !c.tailFull {
			k := min(c.tailCap-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			if len(c.tail) == c.tailCap {
				c.tailFull, c.tailPos = true, 0
			}
			continue
		}
		k := copy(c.tail[c.tailPos:], p)
		c.tailPos = (c.tailPos + k) % c.tailCap
		p = p[k:]
	}
	return n, nil
}

// result returns the kept output, whether something was dropped, the total
// size and the sha256 of the whole stream.
func (c *capture) result() (out []byte, truncated bool, total int64, sum string) {
	tail := c.tail
	if c.tailFull {
		tail = append(append([]byte{}, c.tail[c.tailPos:]...), c.tail[:c.tailPos]...)
	}
	kept := int64(len(c.head) + len(tail))
	out = append(append([]byte{}, c.head...), tail...)
	if kept < c.total {
		marker := fmt.Sprintf("\n[... %d bytes omitted by agentbox; %d bytes total ...]\n", c.total-kept, c.total)
		out = append(append(append([]byte{}, c.head...), marker...), tail...)
		truncated = true
	}
	return out, truncated, c.total, hex.EncodeToString(c.sum.Sum(nil))
}
