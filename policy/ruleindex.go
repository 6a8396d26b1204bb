package policy

import (
	"path"
	"sort"
	"strings"
)

// ruleIndex finds the rules that may match a command line by its first
// word, so that deciding one command does not try every rule (the exec-time
// layer decides every execve).
type ruleIndex struct {
	byFirst [3]map[string][]int // literal first word -> rule positions
	glob    [3][]int            // rules whose first word has '*'
}

func buildIndex(c *commandRules) *ruleIndex {
	x := &ruleIndex{}
	for v := range c.lists {
		x.byFirst[v] = map[string][]int{}
		for i, r := range c.lists[v] {
			if len(r.words) == 0 || strings.Contains(r.words[0], "*") {
				x.glob[v] = append(x.glob[v], i)
				continue
			}
			x.byFirst[v][r.words[0]] = append(x.byFirst[v][r.words[0]], i)
		}
	}
	return x
}

// candidates returns, in list order, the positions of the rules of list
// v that may match a command line whose first word is the static name.
func (x *ruleIndex) candidates(v Verdict, name string, buf []int) []int {
	buf = append(buf[:0], x.byFirst[v][name]...)
	if strings.Contains(name, "/") {
		buf = append(buf, x.byFirst[v][path.Base(name)]...)
	}
	buf = append(buf, x.glob[v]...)
	if len(buf) > 1 {
		sort.Ints(buf)
	}
	return buf
}

// index returns the rule index of c, built once.
func (c *commandRules) index() *ruleIndex {
	if x := c.idx.Load(); x != nil {
		return x
	}
	x := buildIndex(c)
	c.idx.Store(x)
	return x
}
