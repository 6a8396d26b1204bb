package policy

import (
	"fmt"
	"path"
	"strings"
)

// A rule is one entry of commands.allow, commands.ask or commands.deny.
type rule struct {
	id      string // "commands.deny[1]"
	verdict Verdict
	match   string // as written
	why     string
	words   []string // shell words after quote removal; '*' is a glob
}

// parseRuleWords splits a rule's match text into shell words, removing
// quotes ('...', "..." and backslashes). Expansions, operators and
// redirections are refused: a rule is a plain argv prefix.
func parseRuleWords(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty rule; write the command words to match, like \"git push\"")
	}
	var words []string
	var sb strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, sb.String())
				sb.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("%q has an unterminated quote", s)
			}
			sb.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				} else if s[j] == '$' || s[j] == '`' {
					return nil, fmt.Errorf("%q must be plain shell words; $ and backticks are not allowed in rules", s)
				}
			}
			if j >= len(s) {
				return nil, fmt.Errorf("%q has an unterminated quote", s)
			}
			sb.WriteString(unescapeDouble(s[i+1 : j]))
			i = j
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				sb.WriteByte(s[i])
			}
			inWord = true
		case strings.IndexByte(";|&<>()$`", c) >= 0:
			return nil, fmt.Errorf("%q must be plain shell words (no ;, |, &, <, >, (, ), $ or backticks); quote special characters", s)
		default:
			sb.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, sb.String())
	}
	return words, nil
}

// globMatch reports whether s matches pattern, where '*' matches any
// sequence of characters (including '/' and none) and every other
// character matches itself.
func globMatch(pattern, s string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == s
	}
	px, sx := 0, 0
	nextPx, nextSx := -1, -1
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			c := pattern[px]
			if c == '*' {
				nextPx, nextSx = px, sx+1
				px++
				continue
			}
			if sx < len(s) && s[sx] == c {
				px++
				sx++
				continue
			}
		}
		if nextPx >= 0 && nextSx <= len(s) {
			px, sx = nextPx+1, nextSx
			nextSx++
			continue
		}
		return false
	}
	return true
}

// matchRule reports whether the rule's words are a prefix of the command
// line. In may mode (deny and ask rules) words known only at run time count
// as matching whenever they could; in must mode (allow rules) they count
// only when they certainly match.
func (r *rule) matches(cl *cmdline, may bool) bool {
	for i, pw := range r.words {
		if i >= len(cl.words) {
			return may && cl.open
		}
		w := &cl.words[i]
		if w.split && i > 0 {
			// An unquoted expansion may become any number of words: the
			// first starts with the word's literal prefix, and every later
			// position is unknown.
			if !may {
				return false
			}
			return w.prefix == "" || strings.HasPrefix(pw, w.prefix) ||
				strings.Contains(pw, "*") && overlaps(pw, w.prefix, "")
		}
		if !matchWord(pw, w, may, i == 0) {
			return false
		}
	}
	return true
}

func matchWord(pw string, w *word, may, first bool) bool {
	star := strings.Contains(pw, "*")
	switch w.kind {
	case wStatic:
		if globMatch(pw, w.text) {
			return true
		}
		return first && strings.Contains(w.text, "/") && globMatch(pw, path.Base(w.text))
	case wGlob:
		if !may {
			return star && globMatch(pw, w.text)
		}
		if w.text == pw {
			return true
		}
		if star {
			i := strings.IndexAny(w.text, "*?[{")
			j := strings.LastIndexAny(w.text, "*?]})")
			if i < 0 || j < i {
				return true
			}
			return overlaps(pw, w.text[:i], w.text[j+1:])
		}
		ok, err := path.Match(w.text, pw)
		return ok || err != nil
	default: // dynamic
		if !may {
			return strings.Trim(pw, "*") == ""
		}
		if star {
			return overlaps(pw, w.prefix, w.suffix)
		}
		return len(pw) >= len(w.prefix)+len(w.suffix) &&
			strings.HasPrefix(pw, w.prefix) && strings.HasSuffix(pw, w.suffix)
	}
}

// overlaps reports whether a rule pattern with '*' and a word known to
// start with prefix and end with suffix may match the same string.
func overlaps(pattern, prefix, suffix string) bool {
	pp := pattern[:strings.IndexByte(pattern, '*')]
	ps := pattern[strings.LastIndexByte(pattern, '*')+1:]
	return (strings.HasPrefix(pp, prefix) || strings.HasPrefix(prefix, pp)) &&
		(strings.HasSuffix(ps, suffix) || strings.HasSuffix(suffix, ps))
}

// decideArgv decides one simple command by the command rules:
// deny > ask > allow > commands.default.
func (c *commandRules) decide(cl *cmdline) Part {
	part := Part{Argv: cl.argv()}
	var x *ruleIndex
	if len(cl.words) > 0 && cl.words[0].kind == wStatic && c.idx != nil {
		x = c.index()
	}
	var buf [16]int
	for _, v := range [...]Verdict{Deny, Ask, Allow} {
		if x != nil {
			for _, i := range x.candidates(v, cl.words[0].text, buf[:0]) {
				if r := c.lists[v][i]; r.matches(cl, v != Allow) {
					part.Verdict, part.Rule, part.Pattern, part.Why = v, r.id, r.match, r.why
					return part
				}
			}
			continue
		}
		for _, r := range c.lists[v] {
			if r.matches(cl, v != Allow) {
				part.Verdict, part.Rule, part.Pattern, part.Why = v, r.id, r.match, r.why
				return part
			}
		}
	}
	part.Verdict, part.Rule = c.def, "commands.default"
	if cl.open {
		part.Note = "more arguments are added at run time"
	}
	return part
}
