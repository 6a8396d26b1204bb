package main

import (
	"github.com/urfave/cli/v2"
)

// interspersed returns the command's positional arguments. Flags written
// after them (`agentbox batch tasks.yaml --concurrency 4`) were already
// moved in front by hoistFlags, the one place that handles them.
func interspersed(c *cli.Context) ([]string, error) {
	return c.Args().Slice(), nil
}
