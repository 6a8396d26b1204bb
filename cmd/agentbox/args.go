package main

import (
	"flag"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed applies flags written after the positional arguments
// (`agentbox batch tasks.yaml --concurrency 4`), which urfave/cli leaves
// unparsed, and returns the positional arguments.
func interspersed(c *cli.Context) ([]string, error) {
	fs := flag.NewFlagSet(c.Command.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, f := range c.Command.Flags {
		if err := f.Apply(fs); err != nil {
			return nil, err
		}
	}
	var pos []string
	rest := c.Args().Slice()
	for len(rest) > 0 {
		if rest[0] == "--" {
			pos = append(pos, rest[1:]...)
			break
		}
		if !strings.HasPrefix(rest[0], "-") || rest[0] == "-" {
			pos = append(pos, rest[0])
			rest = rest[1:]
			continue
		}
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		rest = fs.Args()
	}
	canonical := map[string]string{}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			canonical[n] = f.Names()[0]
		}
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		if serr := c.Set(canonical[f.Name], f.Value.String()); serr != nil && err == nil {
			err = serr
		}
	})
	return pos, err
}
