package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/agentbox/agentbox"
	"github.com/urfave/cli/v2"
)

// commit is set at build time (Makefile: -X main.commit=...) when the Go
// toolchain's own VCS stamp is off (GOFLAGS=-buildvcs=false).
var commit string

func init() {
	// --version and -v print what `agentbox version` prints.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version, commit, Go version and platform"}
	cli.VersionPrinter = func(c *cli.Context) { printVersion(c.App.Writer) }
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the agentbox version, commit, Go version and platform",
		Action: func(c *cli.Context) error {
			printVersion(c.App.Writer)
			return nil
		},
	}
}

// printVersion writes `agentbox VERSION (commit C[, modified]) goX os/arch`.
func printVersion(w io.Writer) {
	rev, dirty := commit, false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
				if len(rev) > 12 {
					rev = rev[:12]
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	if dirty {
		rev += ", modified"
	}
	fmt.Fprintf(w, "agentbox %s (commit %s) %s %s/%s\n", agentbox.Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
