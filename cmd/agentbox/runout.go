package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/urfave/cli/v2"
)

// newPrinter is run's progress printer on stderr. The answer itself goes
// to stdout (printResult); --quiet, --json and --json-events leave stderr
// to errors only. On a terminal (not TERM=dumb) a live elapsed-time line
// shows what runs; colour unless NO_COLOR.
func newPrinter(c *cli.Context) *agent.Printer {
	quiet := c.Bool("quiet") || c.Bool("json") || c.Bool("json-events")
	p := &agent.Printer{W: c.App.ErrWriter, Quiet: quiet, OmitAnswer: true}
	if f, ok := c.App.ErrWriter.(*os.File); ok && isTerminal(f) && os.Getenv("TERM") != "dumb" {
		p.Color = os.Getenv("NO_COLOR") == ""
		p.Live = true
		p.Width = func() int { return termWidth(f) }
	}
	return p
}

// checkOutputFlags refuses flags that ask for two outputs at once.
func checkOutputFlags(c *cli.Context) error {
	n := 0
	for _, f := range []string{"json", "json-events", "quiet"} {
		if c.Bool(f) {
			n++
		}
	}
	if n > 1 {
		return usageError{errors.New("--json, --json-events and --quiet choose the output: pick one")}
	}
	return nil
}

// printResult writes the run's result on stdout: the JSON object (--json),
// nothing more (--json-events: "end" carried it), or the final answer
// alone, so `agentbox run TASK > answer.txt` holds just the answer.
func printResult(c *cli.Context, res agent.Result, redact func(string) string) {
	if res.FilesChanged == nil {
		res.FilesChanged = []audit.FileChange{}
	}
	switch {
	case c.Bool("json-events"):
	case c.Bool("json"):
		enc := json.NewEncoder(c.App.Writer)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(res)
	case res.Status == agent.StatusOK:
		a := strings.TrimSpace(res.Answer)
		if redact != nil {
			a = redact(a)
		}
		fmt.Fprintln(c.App.Writer, policy.Visible(a))
	}
}
