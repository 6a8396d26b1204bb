// Command layering checks the module's package rules (see package
// layering) and exits 1 when one is broken. `make lint` runs it from the
// module's root: go run ./internal/layering/cmd [DIR].
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/internal/layering"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	module, pkgs, err := layering.Load(context.Background(), dir, "./...")
	if err != nil {
		fmt.Fprintln(os.Stderr, "layering:", err)
		os.Exit(2)
	}
	ps := layering.Check(module, pkgs, layering.Project)
	for _, p := range ps {
		fmt.Println(p)
	}
	if len(ps) > 0 {
		fmt.Fprintf(os.Stderr, "layering: %d package rule(s) broken; the rules and their exceptions are in internal/layering/rules.go\n", len(ps))
		os.Exit(1)
	}
}
