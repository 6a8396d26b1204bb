// Command importcheck reports Go imports whose grouping is not the
// project's (see package importcheck) and exits 1 when there are any.
package main

import (
	"fmt"
	"os"

	"github.com/agentbox/agentbox/internal/importcheck"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	ps, err := importcheck.Tree(root, os.ReadFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "importcheck:", err)
		os.Exit(2)
	}
	for _, p := range ps {
		fmt.Println(p)
	}
	if len(ps) > 0 {
		fmt.Fprintf(os.Stderr, "importcheck: %d import(s) out of their group; group the standard library first, then other modules\n", len(ps))
		os.Exit(1)
	}
}
