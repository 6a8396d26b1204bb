package audit

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
)

// detector is one built-in secret format. Each match of re is replaced
// by a fingerprint, "[REDACTED:<name>:sha256:<8 hex>]" (see fingerprint),
// keeping submatch 1 when keep is set (the label in front of the value,
// e.g. "password = "), so a reviewer can tell occurrences of one secret
// apart from another without seeing either.
type detector struct {
	name string
	re   *regexp.Regexp
	keep bool
	// hints: the regexp runs only on text holding one of them (in the
	// lower-cased text when fold); most text holds none, and a literal
	// search is far cheaper than the regexp.
	hints []string
	fold  bool
	// ok, when set, vets the secret part of a match (look-alikes such as
	// "password = None" or a variable reference are left alone).
	ok func(secret string) bool
}

// fingerprint is the redaction of secret found by the detector name: the
// first 8 hex digits of its sha256 (enough to match occurrences, not to
// recover a high-entropy token; a short password could be guessed from
// it, so passwords found by a label are fingerprinted too but README says
// so).
func fingerprint(name, secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "[REDACTED:" + name + ":sha256:" + hex.EncodeToString(sum[:4]) + "]"
}

// apply replaces every match of d in s.
func (d detector) apply(s string) string {
	idx := d.re.FindAllStringSubmatchIndex(s, -1)
	if len(idx) == 0 {
		return s
	}
	marks := markerSpans(s)
	var b strings.Builder
	last := 0
	for _, m := range idx {
		from, to := m[0], m[1]
		if d.keep {
			// The first group that matched is the label, kept; the
			// group after it, when it matched, is the secret (text after
			// it is kept too), else the rest of the match.
			for g := 2; g+1 < len(m); g += 2 {
				if m[g] >= 0 {
					from = m[g+1]
					if g+3 < len(m) && m[g+2] >= 0 {
						from, to = m[g+2], m[g+3]
					}
					break
				}
			}
		}
		secret := s[from:to]
		if (d.ok != nil && !d.ok(secret)) || overlaps(marks, m[0], m[1]) {
			continue
		}
		b.WriteString(s[last:from])
		b.WriteString(fingerprint(d.name, secret))
		last = to
	}
	b.WriteString(s[last:])
	return b.String()
}

// markerSpans returns the [start, end) of every redaction marker in s:
// the text of a marker ("…:sha256:1a2b3c4d]") is never redacted again.
func markerSpans(s string) [][2]int {
	var out [][2]int
	for off := 0; ; {
		i := strings.Index(s[off:], "[REDACTED")
		if i < 0 {
			return out
		}
		i += off
		j := strings.IndexByte(s[i:], ']')
		if j < 0 {
			return append(out, [2]int{i, len(s)})
		}
		out = append(out, [2]int{i, i + j + 1})
		off = i + j + 1
	}
}

func overlaps(spans [][2]int, a, b int) bool {
	for _, sp := range spans {
		if a < sp[1] && sp[0] < b {
			return true
		}
	}
	return false
}

// applyDetectors replaces every built-in secret format in s.
func applyDetectors(s string) string {
	lower := ""
	for _, d := range detectors {
		text := s
		if d.fold {
			if lower == "" {
				lower = strings.ToLower(s)
			}
			text = lower
		}
		hit := false
		for _, h := range d.hints {
			if strings.Contains(text, h) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		before := s
		s = d.apply(s)
		if s != before {
			lower = ""
		}
	}
	return s
}

// minEncodedLen is the shortest encoded form of a known secret that is
// redacted; shorter runs would hit ordinary text.
const minEncodedLen = 8

// encodedForms returns the forms a known secret may take in output besides
// itself: hex (lower and upper case) and base64 (standard and URL
// alphabets) at each of the three byte alignments, so that the secret is
// found inside a longer encoded text too. For an alignment only the
// characters that encode whole groups of the secret's bytes are kept.
func encodedForms(secret string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= minEncodedLen {
			out = append(out, s)
		}
	}
	h := hex.EncodeToString([]byte(secret))
	add(h)
	add(strings.ToUpper(h))
	for off := 0; off < 3 && off < len(secret); off++ {
		part := secret[off:]
		part = part[:len(part)/3*3]
		add(base64.RawStdEncoding.EncodeToString([]byte(part)))
		add(base64.RawURLEncoding.EncodeToString([]byte(part)))
	}
	return out
}
